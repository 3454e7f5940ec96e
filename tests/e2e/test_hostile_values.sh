#!/usr/bin/env bash
# Values accepted without meaning. Refused with exit code 2 and a message naming the file (and
# line or key), the value and what is valid: YAML tags on sections, lists, keys and the whole
# recipe (as on scalars); a 3 MB recipe value, a 100 KB --set value and a 50 MB name in a
# checkpoint manifest or line in vocab.bpe (each quoted as its first 60 bytes and its length,
# the whole message under 1 KB); a pair merged twice in vocab.bpe; a NaN or an infinity in an
# llm.c file given as model.init_from. Documented behaviours: text that is not valid UTF-8 is
# encoded losslessly by both tokenizers (data encode, data prepare and sample --prompt; data
# decode gives the bytes back), and a warm-up longer than the run trains with a note.
# Every case checks that no file outside the test's scratch directory changed.
source "$(dirname "$0")/lib.sh"
trainer=$(realpath "$trainer")
export OMP_NUM_THREADS=1
make_byte_data "$work/data"
mark_outside
data=(--set "data.train=$work/data/train_*.bin" --set "data.val=$work/data/val_*.bin")
q=configs/debug/tiny.yaml

# recipe NAME YAML: a recipe file $work/NAME.yaml of tiny.yaml's model with YAML appended.
recipe() {
  { sed -n '/^model:/,/^  vocab_multiple/p' "$q"; printf '%s\n' "$2"; } > "$work/$1.yaml"
  echo "$work/$1.yaml"
}
tags_ok=$(recipe tags_ok $'train:\n  steps: 2\ndata: {train: x, tokenizer: byte}')
"$trainer" validate "$tags_ok" > /dev/null 2>&1 || fail "the untagged control recipe does not validate"
tag_map=$(recipe tag_map $'train: !!map\n  steps: 2\ndata: {train: x, tokenizer: byte}')
tag_custom=$(recipe tag_custom $'train: !custom {steps: 2}\ndata: {train: x, tokenizer: byte}')
tag_seq=$(recipe tag_seq $'train:\n  optimizer: {betas: !!seq [0.9, 0.95]}\ndata: {train: x, tokenizer: byte}')
tag_list=$(recipe tag_list $'parallel: {pipeline: 2, stages: !foo [1, 1]}\ndata: {train: x, tokenizer: byte}')
tag_key=$(recipe tag_key $'train:\n  !!str steps: 2\ndata: {train: x, tokenizer: byte}')
printf '!!map\n' > "$work/tag_root.yaml"
cat "$tags_ok" >> "$work/tag_root.yaml"
cases=(
  "$tag_map:8:8: section train: explicit YAML tag tag:yaml.org,2002:map is not supported; write it without the tag; valid: a plain map of the keys device, |validate $tag_map"
  "$tag_custom:8:8: section train: explicit YAML tag !custom is not supported|validate $tag_custom"
  "$tag_seq:9:22: train.optimizer.betas: explicit YAML tag tag:yaml.org,2002:seq is not supported; write the plain list; valid:|validate $tag_seq"
  "$tag_list:8:33: parallel.stages: explicit YAML tag !foo is not supported; write the plain list|validate $tag_list"
  "$tag_key:9:3: key \"steps\": explicit YAML tag tag:yaml.org,2002:str is not supported; write it without the tag; valid: a plain key: device, |validate $tag_key"
  "$work/tag_root.yaml:1:1: the recipe: explicit YAML tag tag:yaml.org,2002:map is not supported; write it without the tag; valid: a plain map of the sections model, |validate $work/tag_root.yaml"
)
expect_refusals 20 "${cases[@]}"
rows=$refusals
# A --set value with a tag (a row of the table would lose its spaces to word splitting):
rc=0
"$trainer" validate "$tags_ok" --set 'train.optimizer.betas=!!seq [0.9, 0.95]' > "$work/set.log" 2>&1 || rc=$?
[[ $rc == 2 ]] && grep -qF "explicit YAML tag tag:yaml.org,2002:seq is not supported" "$work/set.log" ||
  fail "--set with a tagged list: exit $rc: $(cat "$work/set.log")"
rows=$((rows + 1))

# Long values: the message quotes the first 60 bytes and the length, and stays short.
long_row() {  # REGEX ARGS...: one expect_refusals row, then the message must be under 1 KB
  expect_refusals 60 "$1|${*:2}"
  [[ $(stat -c %s "$work/refusal.log") -lt 1024 ]] || fail "${*:2}: a message of $(stat -c %s "$work/refusal.log") bytes"
  rows=$((rows + 1))
}
a60=$(head -c 60 /dev/zero | tr '\0' a)
head -c $((3 << 20)) /dev/zero | tr '\0' a > "$work/a3m"
{ cat "$tags_ok"; printf '  tokenizer: '; cat "$work/a3m"; echo; } | sed 's/^data: {train: x, tokenizer: byte}$/data:\n  train: x/' > "$work/long.yaml"
long_row "data.tokenizer: unknown tokenizer \"$a60\"\.\.\. \(3145728 bytes\): neither gpt2 nor byte" validate "$work/long.yaml"
long_row "--set train.device=${a60:0:47}\.\.\. \(100013 bytes\): train.device: unknown value \"$a60\"\.\.\. \(100000 bytes\)" \
  validate "$tags_ok" --set "train.device=$(head -c 100000 "$work/a3m")"
{ grep -v '^data:' "$tags_ok"; printf "data:\n  train: '"; cat "$work/a3m"; printf "'\n  val: x\n  tokenizer: byte\n"; } \
  > "$work/long_glob.yaml"
long_row "file '$a60\.\.\. \(3145728 bytes\)' not found" train "$work/long_glob.yaml"

# A checkpoint to sample from, export and tamper with.
"$trainer" train "$q" "${data[@]}" --set train.steps=2 --set eval.every=0 --set "checkpoint.dir=$work/ckpt" \
  > "$work/train.log" 2>&1 || fail "training: $(cat "$work/train.log")"
step="$work/ckpt/step_00000002"
mkdir -p "$work/big/a"
cp -r "$step" "$work/big/a/"
/usr/bin/python3 - "$work/big/a/step_00000002/manifest.yaml" <<'PY'
import sys
path = sys.argv[1]
text = open(path).read()
open(path, "w").write(text.replace("name: rank_00000.bin", "name: ../" + "x" * ((50 << 20) - 3), 1))
PY
x57=$(head -c 57 /dev/zero | tr '\0' x)
long_row "manifest.yaml: files\[0\].name '\.\./$x57'\.\.\. \(52428800 bytes\): a checkpoint file must be a plain name" \
  ckpt inspect "$work/big/a/step_00000002"

# vocab.bpe: a 50 MB line and a pair merged twice.
mkdir -p "$work/tok_long" "$work/tok_dup"
cp datasets/tokenizer/encoder.json "$work/tok_long/"
cp datasets/tokenizer/encoder.json "$work/tok_dup/"
{ head -n 1 datasets/tokenizer/vocab.bpe; head -c $((50 << 20)) /dev/zero | tr '\0' a; echo; } > "$work/tok_long/vocab.bpe"
long_row "tok_long/vocab.bpe:2: expected two tokens separated by one space, found '$a60\.\.\. \(52428800 bytes\)'" \
  data encode hello --tokenizer gpt2 --tokenizer-dir "$work/tok_long"
{ head -n 100 datasets/tokenizer/vocab.bpe; sed -n 2p datasets/tokenizer/vocab.bpe; tail -n +101 datasets/tokenizer/vocab.bpe; } \
  > "$work/tok_dup/vocab.bpe"
pair=$(sed -n 2p datasets/tokenizer/vocab.bpe)
expect_refusals 20 "tok_dup/vocab.bpe:101: the merge '$pair' repeats the one on line 2; each pair may be merged once|data encode hello --tokenizer gpt2 --tokenizer-dir $work/tok_dup"
rows=$((rows + refusals))
[[ -z "$(tail -n +2 datasets/tokenizer/vocab.bpe | sort | uniq -d)" ]] || fail "GPT-2's own vocab.bpe repeats a merge"

# model.init_from: NaN or inf at a chosen element of a chosen tensor of an exported model.
"$trainer" ckpt export "$step" --format llmc --out "$work/init.bin" > "$work/export.log" 2>&1 ||
  fail "export: $(cat "$work/export.log")"
poison() {  # OUT FLOAT_INDEX VALUE: a copy of init.bin with one float (counted after the header) set
  /usr/bin/python3 - "$work/init.bin" "$1" "$2" "$3" <<'PY'
import struct, sys
src, out, index, value = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
data = bytearray(open(src, "rb").read())
struct.pack_into("<f", data, 1024 + 4 * index, value)
open(out, "wb").write(data)
PY
}
# tiny: padded vocab 320 x d_model 32 = 10240 floats of wte, then 16 x 32 of wpe, ..., ln_f.bias last.
poison "$work/nan_wte.bin" 0 nan
poison "$work/nan_wpe.bin" $((10240 + 37)) nan
total=$((($(stat -c %s "$work/init.bin") - 1024) / 4))
poison "$work/inf_lnf.bin" $((total - 1)) inf
poison "$work/ninf_wpe.bin" $((10240 + 5)) -inf
init_rows=()
for row in "nan_wte|wte.weight element 0 is nan" "nan_wpe|wpe.weight element 37 is nan" \
           "inf_lnf|ln_f.bias element 31 is inf" "ninf_wpe|wpe.weight element 5 is inf"; do
  init_rows+=("llm.c model file '$work/${row%%|*}.bin': tensor ${row#*|}; model.init_from needs finite weights|train $q ${data[*]} --set train.steps=1 --set eval.every=0 --set model.init_from=$work/${row%%|*}.bin")
done
expect_refusals 30 "${init_rows[@]}"
rows=$((rows + refusals))
"$trainer" train "$q" "${data[@]}" --set train.steps=1 --set eval.every=0 --set "model.init_from=$work/init.bin" \
  > "$work/init_ok.log" 2>&1 || fail "a finite init file is refused: $(cat "$work/init_ok.log")"

# Text that is not UTF-8: encoded byte for byte; decoding gives the same bytes.
bad=$'ab\xff\xfe c\xc0\xaf d\xe2\x82 \xed\xa0\x80 \xf4\x90\x80\x80 end'
for tok in byte gpt2; do
  ids=$("$trainer" data encode "$bad" --tokenizer $tok --tokenizer-dir datasets/tokenizer) || fail "encode ($tok) refused invalid UTF-8"
  # shellcheck disable=SC2086
  "$trainer" data decode $ids --tokenizer $tok --tokenizer-dir datasets/tokenizer > "$work/decoded.$tok" ||
    fail "decode ($tok) failed"
  cmp -s "$work/decoded.$tok" <(printf '%s' "$bad") || fail "$tok: invalid UTF-8 does not round-trip: $(od -c "$work/decoded.$tok")"
  rows=$((rows + 1))
done
mkdir -p "$work/bad_text"
for i in $(seq 1 30); do printf '%s line %d\n\n\n\n' "$bad" "$i"; done > "$work/bad_text/in.txt"
"$trainer" data prepare --input "$work/bad_text/in.txt" --tokenizer gpt2 --tokenizer-dir datasets/tokenizer \
  --out "$work/bad_text" --val-fraction 0 --quiet > "$work/prep.log" 2>&1 || fail "data prepare refused invalid UTF-8: $(cat "$work/prep.log")"
shard_ids=$(/usr/bin/python3 -c '
import struct, sys
d = open(sys.argv[1], "rb").read()
n = struct.unpack_from("<i", d, 8)[0]
print(" ".join(str(t) for t in struct.unpack_from("<%dH" % n, d, 1024) if t != 50256))' "$work/bad_text/train_000000.bin")
# shellcheck disable=SC2086
"$trainer" data decode $shard_ids --tokenizer gpt2 --tokenizer-dir datasets/tokenizer > "$work/decoded.shard"
cmp -s "$work/decoded.shard" <(for i in $(seq 1 30); do printf '%s line %d\n' "$bad" "$i"; done) ||
  fail "data prepare: the shard does not decode to the input's bytes"
rows=$((rows + 1))
"$trainer" sample "$step" --prompt "$bad" --tokens 4 --temperature 0 > "$work/sample.out" 2> "$work/sample.err" ||
  fail "sample refused an invalid UTF-8 prompt: $(cat "$work/sample.err")"
[[ "$(head -c "$(printf "%s" "$bad" | wc -c)" "$work/sample.out" | od -An -tx1)" == "$(printf '%s' "$bad" | od -An -tx1)" ]] ||
  fail "sample: the prompt's bytes are not echoed: $(od -c "$work/sample.out" | head)"
rows=$((rows + 1))

# A warm-up longer than the run: trained, with a note naming both values; none when it fits.
"$trainer" train "$q" "${data[@]}" --set train.steps=2 --set eval.every=0 --set train.lr_schedule.warmup_steps=10 \
  > "$work/warm.log" 2>&1 || fail "a long warm-up is refused: $(cat "$work/warm.log")"
grep -qF "lr_schedule: note: train.lr_schedule.warmup_steps 10 is more than train.steps 2: the run ends during warm-up, at 0.2 of train.optimizer.lr" "$work/warm.log" ||
  fail "no warm-up note: $(cat "$work/warm.log")"
grep -q "step .*2/2" "$work/warm.log" || fail "the run did not train: $(cat "$work/warm.log")"
"$trainer" validate "$q" --set train.steps=2 --set train.lr_schedule.warmup_steps=10 | grep -q "^# lr_schedule: note: " ||
  fail "validate prints no warm-up note"
! "$trainer" validate "$q" --set train.steps=2 --set train.lr_schedule.warmup_steps=2 | grep -q "note:" ||
  fail "a warm-up as long as the run gets a note"
rows=$((rows + 3))

expect_outside_unchanged
echo "PASS: $rows values without meaning refused (exit 2, file/line/key, value, what is valid) or handled as documented"
