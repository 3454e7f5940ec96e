#!/usr/bin/env bash
# tokenizer.json end to end against the reference: `trainer data encode --tokenizer DIR` gives
# the ids Hugging Face's JavaScript implementation gives (scripts/reference/hf_reference_ids.js
# under node) for Llama 3, Qwen 3 and Llama 2 on Moby Dick (the whole book as one text, and
# line by line) and on the tricky-string table joined into one text; decoding gives the text
# back where the tokenizer is lossless. Needs scripts/fetch_data.sh --hf (scripts/test.sh runs it).
source "$(dirname "$0")/lib.sh"
[[ -f datasets/raw/mobydick.txt && -f datasets/reference/tokenizers.js/tokenizers.cjs ]] ||
  fail "datasets/raw/mobydick.txt or datasets/reference/tokenizers.js missing: run scripts/fetch_data.sh --hf"
command -v node >/dev/null || fail "node is missing (scripts/setup.sh installs nodejs)"
ref=scripts/reference/hf_reference_ids.js
mark_outside

# The tricky strings of the Llama 3 table, one text (table lines are hex <TAB> ids).
node -e 'const fs = require("fs");
  const rows = fs.readFileSync(process.argv[1], "utf-8").split("\n").filter((l) => l && l[0] !== "#");
  fs.writeFileSync(process.argv[2], Buffer.concat(rows.map((l) => Buffer.from(l.split("\t")[0] + "0a", "hex"))));' \
  tests/data/hf_llama3_reference.tsv "$work/tricky.txt"
head -c 65536 datasets/raw/mobydick.txt > "$work/mobydick_64k.txt"

same() {  # same WHAT FILE_A FILE_B
  cmp -s "$2" "$3" || { diff <(tr ' ' '\n' < "$2") <(tr ' ' '\n' < "$3") | head -20; fail "$1 differs"; }
  echo "ok: $1 ($(wc -w < "$2") ids)"
}

for name in llama3 qwen3 llama2; do
  dir="datasets/hf/$name"
  [[ -f "$dir/tokenizer.json" ]] || fail "$dir/tokenizer.json missing: run scripts/fetch_data.sh --hf"
  whole=datasets/raw/mobydick.txt
  # The reference BPE of a piece is slow on Llama 2's one-piece-per-text files: 64 kB there.
  [[ $name == llama2 ]] && whole="$work/mobydick_64k.txt"
  node "$ref" "$dir" files "$whole" "$work/tricky.txt" > "$work/$name.ref"
  { "$trainer" data encode --tokenizer "$dir" < "$whole"
    "$trainer" data encode --tokenizer "$dir" < "$work/tricky.txt"; } > "$work/$name.out"
  same "$name: whole texts" "$work/$name.ref" "$work/$name.out"
  node "$ref" "$dir" lines datasets/raw/mobydick.txt > "$work/$name.lines.ref"
  "$trainer" data encode --lines --tokenizer "$dir" < datasets/raw/mobydick.txt > "$work/$name.lines.out"
  same "$name: line by line" "$work/$name.lines.ref" "$work/$name.lines.out"
done

# Round trip through the command line (Llama 3: byte-level, no normalizer, lossless).
# shellcheck disable=SC2046
"$trainer" data decode --tokenizer datasets/hf/llama3 $(sed -n 2p "$work/llama3.out") > "$work/back.txt"
cmp -s "$work/back.txt" "$work/tricky.txt" || fail "llama3: decode(encode(tricky strings)) differs"
echo "ok: llama3 round trip of the tricky strings"
expect_outside_unchanged
