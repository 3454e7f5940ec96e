#!/usr/bin/env bash
# One rule for every output path: missing parent folders are created (mkdir -p), for each
# file or folder the program writes (log.metrics, log.trace, checkpoint.dir, data prepare
# --out, ckpt export --out in every format, sample --logits); a parent that cannot be made a
# folder (a regular file in the way) is exit 2 naming the path and the reason, for each.
source "$(dirname "$0")/lib.sh"
make_byte_data "$work/data"
train=(train configs/debug/tiny.yaml --set "data.train=$work/data/train_*.bin" --set "data.val=$work/data/val_*.bin"
       --set eval.every=0 --set train.steps=2)
"$trainer" "${train[@]}" --set "checkpoint.dir=$work/ckpt" > "$work/t.log" 2>&1 || fail "training: $(cat "$work/t.log")"
echo "a file in the way" > "$work/blocker"

# ROW: what | the path it writes (BASE stands for the parent to test) | the command (OUT for the path)
rows=(
  "log.metrics|BASE/m.jsonl|${train[*]} --set log.metrics=OUT"
  "log.trace|BASE/t.json|${train[*]} --set log.trace=OUT --set log.trace_steps=[1,2]"
  "checkpoint.dir|BASE/ck|${train[*]} --set checkpoint.dir=OUT"
  "data prepare --out|BASE/shards|data prepare --input $work/data/text.txt --tokenizer byte --out OUT --quiet"
  "ckpt export llmc|BASE/m.bin|ckpt export $work/ckpt --format llmc --out OUT"
  "ckpt export safetensors|BASE/m.safetensors|ckpt export $work/ckpt --format safetensors --out OUT"
  "ckpt export hf|BASE/hf|ckpt export $work/ckpt --format hf --out OUT"
  "sample --logits|BASE/l.json|sample $work/ckpt --prompt the --tokens 2 --logits OUT"
)
n=0
for row in "${rows[@]}"; do
  IFS='|' read -r what target cmd <<< "$row"
  # Missing parents, three deep: created.
  out="${target/BASE/$work/new$n/a/b}"
  read -r -a args <<< "${cmd//OUT/$out}"
  "$trainer" "${args[@]}" > "$work/row.log" 2>&1 || fail "$what into missing parents: $(cat "$work/row.log")"
  [[ -e "$out" ]] || fail "$what: $out was not written: $(cat "$work/row.log")"
  # A regular file where a parent folder should be: exit 2 naming it.
  out="${target/BASE/$work/blocker/sub}"
  read -r -a args <<< "${cmd//OUT/$out}"
  rc=0
  "$trainer" "${args[@]}" > "$work/row.log" 2>&1 || rc=$?
  [[ $rc == 2 ]] || fail "$what under a file: exit $rc, want 2: $(cat "$work/row.log")"
  grep -q "$work/blocker/sub" "$work/row.log" || fail "$what under a file: the path is not named: $(cat "$work/row.log")"
  grep -Eq "Not a directory|File exists|in the way" "$work/row.log" || fail "$what under a file: no reason: $(cat "$work/row.log")"
  [[ "$(cat "$work/blocker")" == "a file in the way" ]] || fail "$what: the file in the way changed"
  n=$((n + 1))
done
echo "PASS: $n output paths create missing parents and name a file in the way"
