#!/usr/bin/env bash
# Shards remember their tokenizer: data prepare writes tokenizer.record beside them (published
# with them); training them with another data.tokenizer exits 2 naming the folder and both
# tokenizers (byte shards read as gpt2 would pass every id check), the same tokenizer trains,
# a folder without a record trains with a note, and a record that does not parse is named.
source "$(dirname "$0")/lib.sh"
make_byte_data "$work/data"
record="$work/data/tokenizer.record"
[[ -f "$record" ]] || fail "data prepare wrote no tokenizer.record: $(ls "$work/data")"
grep -q "^tokenizer: byte$" "$record" && grep -q "^fingerprint: byte$" "$record" && grep -q "^vocab_size: 257$" "$record" ||
  fail "record: $(cat "$record")"
train=(train configs/debug/tiny.yaml --set "data.train=$work/data/train_*.bin" --set "data.val=$work/data/val_*.bin"
       --set train.steps=1 --set eval.every=0)

"$trainer" "${train[@]}" > "$work/same.log" 2>&1 || fail "the same tokenizer: $(cat "$work/same.log")"
! grep -q "carry no tokenizer.record" "$work/same.log" || fail "a recorded folder was noted: $(cat "$work/same.log")"

rc=0
"$trainer" "${train[@]}" --set data.tokenizer=gpt2 --set model.vocab_size=50257 > "$work/other.log" 2>&1 || rc=$?
[[ $rc == 2 ]] || fail "gpt2 on byte shards: exit $rc, want 2: $(cat "$work/other.log")"
grep -q "data.train: the shards in '$work/data' were made with the tokenizer \"byte\" (vocabulary 257, fingerprint byte; $work/data/tokenizer.record), but data.tokenizer is \"gpt2\" (vocabulary 50257" \
  "$work/other.log" || fail "the mismatch is not named: $(cat "$work/other.log")"
! grep -q "^step " "$work/other.log" || fail "gpt2 on byte shards trained"

printf 'tokenizer: byte\nfingerprint byte\n' > "$work/bad.record"
cp "$work/bad.record" "$record"
rc=0
"$trainer" "${train[@]}" > "$work/bad.log" 2>&1 || rc=$?
[[ $rc == 2 ]] && grep -q "$record: 'fingerprint byte' is not a 'key: value' line" "$work/bad.log" ||
  fail "a broken record: exit $rc: $(cat "$work/bad.log")"

rm "$record"
"$trainer" "${train[@]}" > "$work/none.log" 2>&1 || fail "no record: $(cat "$work/none.log")"
grep -q "^data: note: the shards in '$work/data' carry no tokenizer.record (made by llm.c's scripts or an older trainer)" \
  "$work/none.log" || fail "no note for a folder without a record: $(cat "$work/none.log")"
echo "PASS: the tokenizer record is written, matched, refused on a mismatch and noted when absent"
