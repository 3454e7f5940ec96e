#!/usr/bin/env bash
# `data prepare` with a tokenizer.json: uint32 shards for Llama 3's 128,256 ids, BOS/EOS per
# document from tokenizer_config.json or --bos/--eos, shards byte-identical for 1 and 2
# threads; a recipe naming a tokenizer.json is checked against it (vocab_size, data.bos);
# mistakes exit 2 naming the option, the token or the key. Needs scripts/fetch_data.sh --hf.
source "$(dirname "$0")/lib.sh"
for name in llama3 qwen3; do
  [[ -f datasets/hf/$name/tokenizer.json ]] || fail "datasets/hf/$name missing: run scripts/fetch_data.sh --hf"
done
[[ -f datasets/raw/mobydick.txt ]] || fail "datasets/raw/mobydick.txt missing: run scripts/fetch_data.sh"
mark_outside

prepare() { "$trainer" data prepare --input datasets/raw/mobydick.txt --quiet --shard-tokens 65536 "$@"; }

one="$(prepare --tokenizer datasets/hf/llama3 --out "$work/t1" --threads 1)"
echo "$one"
grep -q "vocab 128256, uint32 per token" <<<"$one" || fail "llama3: not uint32 shards"
grep -q "per document: BOS '<|begin_of_text|>' (id 128000), EOS none" <<<"$one" || fail "llama3: BOS"
grep -q "1 thread(s)" <<<"$one" || fail "llama3: thread count"
prepare --tokenizer datasets/hf/llama3 --out "$work/t2" --threads 2 > /dev/null
n=0
for f in "$work"/t1/*.bin; do
  cmp -s "$f" "$work/t2/$(basename "$f")" || fail "$(basename "$f") differs between 1 and 2 threads"
  n=$((n + 1))
done
[[ $n -ge 4 && $(ls "$work"/t2/*.bin | wc -l) -eq $n ]] || fail "expected the same >= 4 shards, got $n"
echo "ok: $n shards byte-identical for 1 and 2 threads"
inspect="$("$trainer" data inspect "$work/t1/train_*.bin" --tokenizer datasets/hf/llama3 --head 3)"
grep -q "uint32 (magic 20240801 v7)" <<<"$inspect" || fail "inspect: not uint32"
grep -q "total: .* tokens" <<<"$inspect" || fail "inspect: no total"
docs="$(sed -n 's/.*, \([0-9,]*\) documents (BOS 128000 .<|begin_of_text|>.).*/\1/p' <<<"$inspect" | tr -d , | awk '{ s += $1 } END { print s }')"
[[ "$docs" -eq 128 ]] || fail "inspect: $docs BOS ids in the train shards, want 128 (one per document)"
echo "ok: 128 train documents, each starting with BOS"

qwen="$(prepare --tokenizer datasets/hf/qwen3 --out "$work/q" --val-fraction 0)"
grep -q "per document: BOS none, EOS '<|im_end|>' (id 151645)" <<<"$qwen" || fail "qwen3: EOS from the config: $qwen"
qwen="$(prepare --tokenizer datasets/hf/qwen3 --out "$work/q" --val-fraction 0 --eos '<|endoftext|>')"
grep -q "EOS '<|endoftext|>' (id 151643)" <<<"$qwen" || fail "qwen3: --eos override: $qwen"
expect_exit2 "neither a BOS nor an EOS" prepare --tokenizer datasets/hf/qwen3 --out "$work/x" --eos none
expect_exit2 'data prepare: --bos: the tokenizer has no token "<nope>"' \
  prepare --tokenizer datasets/hf/llama3 --out "$work/x" --bos '<nope>'
expect_exit2 "unknown tokenizer '$work/none.json'" prepare --tokenizer "$work/none.json" --out "$work/x"
mkfifo "$work/fifo.json"
expect_exit2 "not a regular file (a FIFO)" timeout 20 "$trainer" data encode --tokenizer "$work/fifo.json" hi
mkdir -p "$work/empty_folder"
expect_exit2 "the folder '$work/empty_folder' holds no tokenizer.json" "$trainer" data encode --tokenizer "$work/empty_folder" hi
mkdir -p "$work/fifo_config"
cp datasets/hf/qwen3/tokenizer.json "$work/fifo_config/"
mkfifo "$work/fifo_config/tokenizer_config.json"
expect_exit2 "tokenizer_config.json': not a regular file (a FIFO)" timeout 20 "$trainer" data encode --tokenizer "$work/fifo_config" hi

# A recipe that names the tokenizer.json: vocab_size must hold its ids, data.bos must exist.
cat > "$work/r.yaml" <<EOF
model: {n_layer: 2, n_head: 2, d_model: 32, vocab_size: 128256, seq_len: 16}
train: {device: cpu, micro_batch: 2, global_batch: 4, steps: 2}
data: {train: "$work/t1/train_*.bin", tokenizer: datasets/hf/llama3, bos: "<|begin_of_text|>"}
EOF
"$trainer" validate "$work/r.yaml" > "$work/validate.txt" || fail "validate: $(cat "$work/validate.txt")"
sed 's/vocab_size: 128256/vocab_size: 32000/' "$work/r.yaml" > "$work/small.yaml"
expect_exit2 "small.yaml:1:57: model.vocab_size: 32000 is smaller than the datasets/hf/llama3 tokenizer's 128256" \
  "$trainer" validate "$work/small.yaml"
expect_exit2 'data.bos: the tokenizer has no token "<s>"' "$trainer" validate "$work/r.yaml" --set data.bos='<s>'
expect_exit2 "data.tokenizer: unknown tokenizer" "$trainer" validate "$work/r.yaml" --set data.tokenizer=llama9
expect_outside_unchanged
