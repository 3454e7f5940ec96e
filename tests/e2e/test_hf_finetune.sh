#!/usr/bin/env bash
# Hugging Face folders end to end: a trained tiny llama exported with --format hf (sharded by a
# small --max-shard-size, which the one-file formats refuse) fine-tunes from the folder with
# configs/finetune-tiny-llama.yaml and its loss falls; a run from the folder with lr 1e-30 (an
# update far below the weights' rounding; lr 0 is refused) exports a folder whose safetensors
# are byte-equal to the first (import then export is exact); tensor 2 and pipeline 2 ranks loading from the
# folder train the same losses as one process; a recipe whose shape differs exits 2 listing it.
source "$(dirname "$0")/lib.sh"
make_byte_data "$work/data"
data=(--set "data.train=$work/data/train_*.bin" --set "data.val=$work/data/val_*.bin" --set eval.every=0)
"$trainer" train configs/debug/tiny-llama.yaml "${data[@]}" --set "checkpoint.dir=$work/ckpt" \
  --set train.steps=8 > "$work/train.log" 2>&1 || fail "training: $(cat "$work/train.log")"
"$trainer" ckpt export "$work/ckpt" --format hf --out "$work/hf1" --max-shard-size 20KB > "$work/export.log" 2>&1 ||
  fail "export: $(cat "$work/export.log")"
[[ -f "$work/hf1/model.safetensors.index.json" && -f "$work/hf1/config.json" && -f "$work/hf1/generation_config.json" ]] ||
  fail "export wrote: $(ls "$work/hf1")"
# The formats that write one file refuse a shard size rather than ignore it, and write nothing.
for format in safetensors llmc; do
  status=0
  "$trainer" ckpt export "$work/ckpt" --format $format --out "$work/one.$format" --max-shard-size 20KB \
    > "$work/one.log" 2>&1 || status=$?
  [[ $status -eq 2 ]] || fail "$format with --max-shard-size: exit $status, not 2: $(cat "$work/one.log")"
  grep -q "^error: ckpt export --max-shard-size 20KB: only --format hf shards its files, but --format is $format" \
    "$work/one.log" || fail "$format with --max-shard-size: $(cat "$work/one.log")"
  [[ ! -e "$work/one.$format" ]] || fail "$format with --max-shard-size wrote $work/one.$format"
done

ft=(configs/finetune-tiny-llama.yaml "${data[@]}" --set "model.init_from=$work/hf1")
"$trainer" train "${ft[@]}" --set "log.metrics=$work/ft.jsonl" > "$work/ft.log" 2>&1 || fail "fine-tune: $(cat "$work/ft.log")"
grep -q "^model: weights from model.init_from \"$work/hf1\" (checked: shapes and finite values)" "$work/ft.log" ||
  fail "the log does not say where the weights came from: $(cat "$work/ft.log")"
! grep -q "random init" "$work/ft.log" || fail "a fine-tune says random init"
first=$(losses "$work/ft.jsonl" | head -n 3 | awk '{ s += $2 } END { print s / NR }')
last=$(losses "$work/ft.jsonl" | tail -n 3 | awk '{ s += $2 } END { print s / NR }')
awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a) }' || fail "fine-tuning loss did not fall: $first -> $last"

"$trainer" train "${ft[@]}" --set train.optimizer.lr=1e-30 --set train.steps=1 --set "checkpoint.dir=$work/ckpt0" \
  > "$work/lr0.log" 2>&1 || fail "lr 0 run: $(cat "$work/lr0.log")"
"$trainer" ckpt export "$work/ckpt0" --format hf --out "$work/hf2" --max-shard-size 20KB > /dev/null 2>&1 || fail "re-export"
n=0
for f in "$work"/hf1/model-*.safetensors; do
  cmp -s "$f" "$work/hf2/$(basename "$f")" || fail "$(basename "$f") differs after import and export"
  n=$((n + 1))
done
[[ $n -gt 1 ]] || fail "expected several shards, got $n"

for layout in "parallel.tensor=2" "parallel.pipeline=2"; do
  "${MPIEXEC[@]}" -n 2 "$trainer" train "${ft[@]}" --set "$layout" --set "log.metrics=$work/l.jsonl" \
    > "$work/l.log" 2>&1 || fail "$layout: $(cat "$work/l.log")"
  same_losses "$(losses "$work/ft.jsonl")" "$(losses "$work/l.jsonl")" 1e-5 || fail "$layout trains other losses than one process"
  rm -f "$work/l.jsonl"
done

rc=0
out=$("$trainer" train "${ft[@]}" --set model.n_layer=3 --set model.ffn_dim=64 2>&1) || rc=$?
[[ $rc == 2 && "$out" == *"model.n_layer: folder 2, recipe 3"* && "$out" == *"model.ffn_dim: folder 48, recipe 64"* ]] ||
  fail "shape mismatch: rc $rc: $out"
echo "PASS: fine-tuning loss $first -> $last"
