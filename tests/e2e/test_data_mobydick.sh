#!/usr/bin/env bash
# End to end: `trainer data prepare` on the default corpus (Moby Dick, fetched by
# scripts/fetch_data.sh, which scripts/test.sh runs first), then `data inspect` of the result,
# then bad inputs: each exits 2 and names the file.
source "$(dirname "$0")/lib.sh"
[[ -f datasets/raw/mobydick.txt && -f datasets/tokenizer/encoder.json ]] || {
  echo "FAIL: datasets/raw/mobydick.txt or datasets/tokenizer missing: run scripts/fetch_data.sh" >&2
  exit 1
}
out="$work"

summary="$("$trainer" data prepare --input datasets/raw/mobydick.txt --tokenizer gpt2 \
  --out "$out/mobydick" --quiet)"
echo "$summary"
grep -q "documents: 135 (128 train, 7 val" <<<"$summary" || fail "unexpected document counts"
[[ -f "$out/mobydick/train_000000.bin" && -f "$out/mobydick/val_000000.bin" ]] ||
  fail "missing shards"
train_tokens="$(sed -n 's/^  train: \([0-9,]*\) tokens.*/\1/p' <<<"$summary" | tr -d ,)"
size="$(stat -c %s "$out/mobydick/train_000000.bin")"
[[ "$size" -eq $((1024 + 2 * train_tokens)) ]] || fail "shard size $size != 1024 + 2 x $train_tokens"

inspect="$("$trainer" data inspect "$out/mobydick/*.bin" --tokenizer gpt2 --head 12 \
  --seq-len 64 --global-batch 8)"
echo "$inspect"
grep -q "128 documents (BOS 50256 '<|endoftext|>')" <<<"$inspect" || fail "inspect: train documents"
grep -q "CHAPTER" <<<"$inspect" || fail "inspect: decoded text"

head -c 2000 "$out/mobydick/train_000000.bin" > "$out/truncated.bin"
expect_exit2 "$out/truncated.bin" "$trainer" data inspect "$out/truncated.bin"
expect_exit2 "$out/nothing_*.bin" "$trainer" data inspect "$out/nothing_*.bin"
expect_exit2 "$out/mobydick/val_000000.bin" "$trainer" data inspect "$out/mobydick/val_000000.bin" \
  --tokenizer byte
expect_exit2 "$out/missing.txt" "$trainer" data prepare --input "$out/missing.txt" --out "$out/x"
expect_exit2 "$out/no_tokenizer/encoder.json" "$trainer" data prepare \
  --input datasets/raw/mobydick.txt --tokenizer-dir "$out/no_tokenizer" --out "$out/x"
echo "PASS"
