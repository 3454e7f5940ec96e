#!/usr/bin/env bash
# Values from outside that a message echoes (recipe and --set values, file names, checkpoint
# manifests, lock and marker files, tokenizer.json, config.json, a shard index)
# never reach the terminal raw: each row plants an escape sequence and a newline in one such
# value, and the run must end as it should (exit 2 for a refusal; a stale lock is taken over
# with a note) with the control characters written as \xNN (no ESC byte, no injected line).
source "$(dirname "$0")/lib.sh"
make_byte_data "$work/data"
esc=$'\e[31m'
nl=$'\n'
train=(train configs/debug/tiny.yaml --set "data.val=$work/data/val_*.bin" --set eval.every=0 --set train.steps=1)
"$trainer" "${train[@]}" --set "data.train=$work/data/train_*.bin" --set "checkpoint.dir=$work/ckpt" > "$work/t.log" 2>&1 ||
  fail "training: $(cat "$work/t.log")"
step=$(ls -d "$work"/ckpt/step_* | head -1)

# Each row is "what|exit code|command"; its value is planted first.
planted="x${esc}y${nl}INJECTED"
mkdir -p "$work/p"
# 1. a recipe value, 2. a --set value
printf 'model: {arch: llama}\ndata: {train: "x\\e[31my\\nINJECTED_*.bin", tokenizer: byte}\ntrain: {steps: 1}\n' > "$work/p/r.yaml"
# 3. a file name a glob matches (a token shard too short to hold a sample)
mkdir -p "$work/p/names" && printf 'x' > "$work/p/names/train_${planted}.bin"
# 4. a checkpoint manifest value
cp -r "$work/ckpt" "$work/ck_manifest"
m=$(ls -d "$work"/ck_manifest/step_* | head -1)/manifest.yaml
sed -i 's|arch: gpt2}$|arch: "gpt2\\e[31m\\nINJECTED"}|' "$m"
# 5. a lock file's holder line
mkdir -p "$work/ck_lock" && printf 'pid 1 on host %s\n' "$planted" > "$work/ck_lock/.lock"
# 6. a publication marker
mkdir -p "$work/p/marked" && cp "$work"/data/train_*.bin "$work/p/marked/" && printf '%s\n' "$planted" > "$work/p/marked/.publishing"
# 7. a tokenizer.json token
printf '{"model": {"type": "BPE", "vocab": {"a": 0, "b\\u001b[31m": 0}, "merges": []}}' > "$work/p/tok.json"
# 8. a config.json value
mkdir -p "$work/p/hf" && printf '{"model_type": "llama\\u001b[31m\\nINJECTED"}' > "$work/p/hf/config.json"
# 9. a shard name in a Hugging Face folder's index
"$trainer" ckpt export "$work/ckpt" --format hf --out "$work/p/hf_index" --max-shard-size 20KB > "$work/e.log" 2>&1 ||
  fail "export: $(cat "$work/e.log")"
sed -i '0,/"model-00001-of-/s//"model\\u001b[31m-00001-of-/' "$work/p/hf_index/model.safetensors.index.json"

rows=(
  "recipe value|2|$trainer train $work/p/r.yaml"
  "--set value|2|$trainer ${train[*]} --set data.train=$work/p/none_${esc}_*.bin"
  "file name|2|$trainer ${train[*]} --set data.train=$work/p/names/train_*.bin"
  "manifest value|2|$trainer ckpt inspect $work/ck_manifest"
  "lock holder|0|$trainer ${train[*]} --set data.train=$work/data/train_*.bin --set checkpoint.dir=$work/ck_lock"
  "publication marker|2|$trainer ${train[*]} --set data.train=$work/p/marked/train_*.bin"
  "tokenizer.json token|2|$trainer data prepare --input $work/data/text.txt --tokenizer $work/p/tok.json --out $work/p/o1 --quiet"
  "config.json value|2|$trainer ${train[*]} --set data.train=$work/data/train_*.bin --set model.from=$work/p/hf"
  "index shard name|2|$trainer ${train[*]} --set data.train=$work/data/train_*.bin --set model.init_from=$work/p/hf_index"
)
n=0
for row in "${rows[@]}"; do
  IFS='|' read -r what want cmd <<< "$row"
  read -r -a args <<< "$cmd"
  rc=0
  "${args[@]}" > "$work/row.log" 2>&1 || rc=$?
  [[ $rc == "$want" ]] || fail "$what: exit $rc, want $want: $(cat -v "$work/row.log")"
  grep -q '\\x1b' "$work/row.log" || fail "$what: the planted value is not echoed escaped: $(cat -v "$work/row.log")"
  ! grep -q $'\e' "$work/row.log" || fail "$what: an ESC byte reached the output: $(cat -v "$work/row.log")"
  ! grep -q "^INJECTED" "$work/row.log" || fail "$what: a planted newline started a line: $(cat -v "$work/row.log")"
  n=$((n + 1))
done
echo "PASS: $n echoed values from outside escaped"
