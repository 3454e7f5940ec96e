#!/usr/bin/env bash
# The interleaved schedule end to end on the debug layout model widened to 8 layers: 4 stages
# x 2 virtual stages trains and evaluates what one process does (losses and validation losses
# to 1e-5), reports its chunks and bubble at start, saves a checkpoint that resumes on 2 stages
# with 1f1b and continues on the same losses; plan --search ranks interleaved layouts; the
# recipe rules (chunks need the schedule and vice versa, whole groups of micro-batches, a layer
# per virtual stage) exit 2 naming the key.
source "$(dirname "$0")/lib.sh"
make_byte_data "$work/data"
common=(--set "data.train=$work/data/train_*.bin" --set "data.val=$work/data/val_*.bin" --set model.n_layer=8
        --set eval.every=3 --set eval.batches=4)
interleaved=(--set parallel.schedule=interleaved --set parallel.virtual_stages=2)

"$trainer" train configs/debug/layouts.yaml "${common[@]}" --set "checkpoint.dir=$work/ref" \
  --set "log.metrics=$work/ref.jsonl" > "$work/ref.log" 2>&1 || fail "one process: $(cat "$work/ref.log")"

"${MPIEXEC[@]}" -n 4 "$trainer" train configs/debug/layouts.yaml "${common[@]}" $(layout_args 1 1 4 0) "${interleaved[@]}" \
  --set "checkpoint.dir=$work/il" --set checkpoint.every=6 --stop-at 6 --set "log.metrics=$work/il.jsonl" \
  > "$work/il.log" 2>&1 || fail "interleaved run: $(cat "$work/il.log")"
grep -q "pipeline: schedule interleaved, 4 stages, 8 micro-batches, bubble fraction 0.158" "$work/il.log" \
  || fail "no interleaved pipeline line (3/19 bubble): $(grep pipeline "$work/il.log")"
grep -q "pipeline: 2 virtual stages per rank, layers per virtual stage \[1, 1, 1, 1, 1, 1, 1, 1\]" "$work/il.log" \
  || fail "no virtual stage line: $(grep pipeline "$work/il.log")"
[[ -f "$work/il/step_00000006/manifest.yaml" ]] || fail "no checkpoint at step 6"
grep -q "virtual_stages: 2" "$work/il/step_00000006/manifest.yaml" || fail "the manifest lacks virtual_stages"

# Resume on 2 stages with 1f1b: the checkpoint holds global tensors, whatever the chunks.
"${MPIEXEC[@]}" -n 2 "$trainer" train configs/debug/layouts.yaml "${common[@]}" $(layout_args 1 1 2 0) \
  --set "checkpoint.dir=$work/il" --set "log.metrics=$work/il.jsonl" > "$work/resume.log" 2>&1 \
  || fail "resume on 1f1b: $(cat "$work/resume.log")"
grep -q "resuming from .*step_00000006" "$work/resume.log" || fail "did not resume: $(cat "$work/resume.log")"

ref=$(losses "$work/ref.jsonl")
got=$(losses "$work/il.jsonl")
same_losses "$got" "$ref" 1e-5 || fail "interleaved + resumed losses differ from one process"
val() { grep '"val_loss"' "$1" | sed -E 's/.*"step": ([0-9]+).*"val_loss": ([^,}]+).*/\1 \2/'; }
[[ $(val "$work/ref.jsonl" | wc -l) -eq 5 ]] || fail "expected 5 evaluations (steps 0, 3, ... 12): $(val "$work/ref.jsonl")"
same_losses "$(val "$work/il.jsonl")" "$(val "$work/ref.jsonl")" 1e-5 || fail "validation losses differ"
echo "$got" | paste - <(echo "$ref") | head -12

"$trainer" plan configs/debug/layouts.yaml --set model.n_layer=8 --world 4 --search --top 400 > "$work/search.txt" \
  || fail "plan --search: $(cat "$work/search.txt")"
grep -qE "1x1x4 +0 +[0-9]+ int x2" "$work/search.txt" || fail "no interleaved layout in the search: $(cat "$work/search.txt")"

expect_exit2 "parallel.schedule: interleaved needs parallel.virtual_stages >= 2" \
  "$trainer" validate configs/debug/layouts.yaml --set parallel.pipeline=2 --set parallel.schedule=interleaved
expect_exit2 "parallel.virtual_stages: 2 chunks per rank need parallel.schedule: interleaved but it is 1f1b" \
  "$trainer" validate configs/debug/layouts.yaml --set parallel.pipeline=2 --set parallel.virtual_stages=2
expect_exit2 "a step has 8 micro-batches per data rank" \
  "$trainer" validate configs/debug/layouts.yaml --set parallel.pipeline=3 "${interleaved[@]}" --set model.n_layer=6
expect_exit2 "parallel.virtual_stages: 2 x parallel.pipeline 4 = 8 virtual stages but model.n_layer is 4" \
  "$trainer" validate configs/debug/layouts.yaml --set parallel.pipeline=4 "${interleaved[@]}"
echo "PASS: interleaved trains, evaluates and resumes as one process does; its rules exit 2"
