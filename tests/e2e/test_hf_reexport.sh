#!/usr/bin/env bash
# Re-exporting into a folder that holds an earlier Hugging Face export: the export owns its
# whole set of files. Without --force such a folder is refused (exit 2, naming the files) and
# left as it was; with --force the set is replaced as one, in every direction (one file over
# shards, shards over one file, other shard counts), so no stale index, shard or tokenizer
# file survives beside the new weights, a file of another name is kept, and the folder then
# loads exactly the new weights. A folder holding both forms, or the marker an unfinished
# export leaves, is refused by the loader naming the cause. --force with a one-file format is
# refused rather than ignored.
source "$(dirname "$0")/lib.sh"
make_byte_data "$work/data"
data=(--set "data.train=$work/data/train_*.bin" --set "data.val=$work/data/val_*.bin" --set eval.every=0)
"$trainer" train configs/debug/tiny-llama.yaml "${data[@]}" --set "checkpoint.dir=$work/ckpt" --set checkpoint.every=4 \
  --set checkpoint.keep=0 --set train.steps=8 > "$work/train.log" 2>&1 || fail "training: $(cat "$work/train.log")"
old="$work/ckpt/step_00000004" new="$work/ckpt/step_00000008"
export_to() {  # export_to CKPT OUT [ARGS...]
  local ckpt=$1 out=$2; shift 2
  "$trainer" ckpt export "$ckpt" --format hf --out "$out" "$@" > "$work/export.log" 2>&1
}
# The reference: the new checkpoint exported alone, one file and sharded.
export_to "$new" "$work/ref1" || fail "reference export: $(cat "$work/export.log")"
export_to "$new" "$work/ref3" --max-shard-size 20KB || fail "reference export: $(cat "$work/export.log")"
listing() { (cd "$1" && ls -A | sort | tr '\n' ' '); }

rows=0
# ROW: the earlier export's args | the new export's args | the reference it must equal
for row in "--max-shard-size 20KB||ref1" "|--max-shard-size 20KB|ref3" "--max-shard-size 10KB|--max-shard-size 20KB|ref3" \
           "--max-shard-size 20KB|--max-shard-size 20KB|ref3"; do
  IFS='|' read -r first second ref <<< "$row"
  dir="$work/re$rows"
  read -r -a first_args <<< "$first"
  read -r -a second_args <<< "$second"
  export_to "$old" "$dir" "${first_args[@]}" || fail "row '$row': first export: $(cat "$work/export.log")"
  echo "my notes" > "$dir/README.md"
  before=$(cd "$dir" && md5sum * | sort)
  rc=0
  export_to "$new" "$dir" "${second_args[@]}" || rc=$?
  [[ $rc == 2 ]] || fail "row '$row': re-export without --force: exit $rc: $(cat "$work/export.log")"
  grep -q "^error: ckpt export --out '$dir' already holds an export (config.json, generation_config.json, model" \
    "$work/export.log" || fail "row '$row': $(cat "$work/export.log")"
  grep -q "valid: a new or empty folder, or --force to replace that whole set" "$work/export.log" || fail "row '$row': no remedy"
  [[ "$(cd "$dir" && md5sum * | sort)" == "$before" ]] || fail "row '$row': the refused export changed the folder"
  export_to "$new" "$dir" "${second_args[@]}" --force || fail "row '$row': --force: $(cat "$work/export.log")"
  want=$( (ls -A "$work/$ref"; echo README.md) | sort | tr '\n' ' ')
  [[ "$(listing "$dir")" == "$want" ]] || fail "row '$row': after --force the folder holds '$(listing "$dir")', want '$want'"
  for f in "$work/$ref"/*; do
    cmp -s "$f" "$dir/$(basename "$f")" || fail "row '$row': $(basename "$f") differs from a fresh export"
  done
  [[ "$(cat "$dir/README.md")" == "my notes" ]] || fail "row '$row': a file of another name was touched"
  rows=$((rows + 1))
done

# The loader: both forms in one folder, and the marker of an export that did not finish.
ft=(configs/finetune-tiny-llama.yaml "${data[@]}" --set train.steps=1)
cp -r "$work/ref3" "$work/both" && cp "$work/ref1/model.safetensors" "$work/both/"
rc=0
"$trainer" train "${ft[@]}" --set "model.init_from=$work/both" > "$work/both.log" 2>&1 || rc=$?
[[ $rc == 2 ]] && grep -q "'$work/both' holds both model.safetensors and model.safetensors.index.json" "$work/both.log" ||
  fail "both forms: exit $rc: $(cat "$work/both.log")"
cp -r "$work/ref1" "$work/half" && echo "ckpt export, pid 999999 publishing a Hugging Face folder" > "$work/half/.publishing"
for key in model.init_from model.from; do
  rc=0
  "$trainer" train "${ft[@]}" --set "$key=$work/half" > "$work/half.log" 2>&1 || rc=$?
  [[ $rc == 2 ]] && grep -q "model folder '$work/half': its folder holds $work/half/.publishing (ckpt export, pid 999999" \
    "$work/half.log" || fail "$key of an unfinished export: exit $rc: $(cat "$work/half.log")"
done
export_to "$new" "$work/half" --force || fail "export over an unfinished one: $(cat "$work/export.log")"
"$trainer" train "${ft[@]}" --set "model.init_from=$work/half" > "$work/half.log" 2>&1 || fail "after --force: $(cat "$work/half.log")"

rc=0
"$trainer" ckpt export "$new" --format safetensors --out "$work/one.safetensors" --force > "$work/one.log" 2>&1 || rc=$?
[[ $rc == 2 ]] && grep -q "^error: ckpt export --force: only --format hf replaces a set of files" "$work/one.log" ||
  fail "--force with safetensors: exit $rc: $(cat "$work/one.log")"
echo "PASS: $rows re-exports refused without --force and replaced whole with it; both forms and an unfinished export refused"
