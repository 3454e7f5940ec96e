#!/usr/bin/env bash
# Compares `trainer data encode` with the reference encoder (npm gpt-3-encoder's Encoder.js
# under node) file by file on a corpus, e.g. the State of the Union texts:
#   scripts/fetch_data.sh --sotu
#   scripts/reference/check_gpt2_corpus.sh build/trainer datasets/raw/sotu/*.txt
# The reference concatenates arrays per piece (quadratic in a file's tokens): a 1 MB file takes
# minutes, so prefer many small files. Exit 0 when every file encodes identically.
set -euo pipefail
trainer="$(realpath "$1")"; shift
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
tgz="$repo_root/datasets/.cache/npm/gpt-3-encoder-1.1.4.tgz"
[[ -f "$tgz" ]] || { echo "missing $tgz: run scripts/fetch_data.sh" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
tar -xzf "$tgz" -C "$work"
cat > "$work/encode_files.js" <<JS
const fs = require('fs');
const { encode } = require('$work/package/Encoder.js');
for (const f of process.argv.slice(2)) process.stdout.write(encode(fs.readFileSync(f, 'utf-8')).join(' ') + '\n');
JS
node "$work/encode_files.js" "$@" > "$work/reference.txt"
for f in "$@"; do
  "$trainer" data encode --tokenizer-dir "$repo_root/datasets/tokenizer" < "$f"
done > "$work/trainer.txt"
if cmp -s "$work/reference.txt" "$work/trainer.txt"; then
  echo "identical: $# files, $(wc -w < "$work/trainer.txt") tokens"
else
  paste -d '\n' "$work/reference.txt" "$work/trainer.txt" | head -c 2000
  echo "DIFFERENT (see above: reference line, then trainer line)" >&2
  exit 1
fi
