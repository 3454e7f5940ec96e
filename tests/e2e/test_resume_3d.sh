#!/usr/bin/env bash
# A 3D run (data 2 x tensor 2 x pipeline 2, ZeRO-1, 1f1b) saved at step 4 and resumed on the
# same layout continues bit-identically: losses after step 4 and every rank's final checkpoint
# file equal those of an uninterrupted 8-step run.
source "$(dirname "$0")/lib.sh"
make_byte_data "$work/data"
run() {  # name [stop_at]
  "${MPIEXEC[@]}" -n 8 "$trainer" train configs/debug/layouts.yaml $(layout_args 2 2 2 1) --set train.steps=8 \
    --set "data.train=$work/data/train_*.bin" --set "checkpoint.dir=$work/$1" --set "log.metrics=$work/$1.jsonl" \
    ${2:+--stop-at ${2:-}} > "$work/$1-${2:-}.log" 2>&1 || fail "run $1 ${2:-}: $(cat "$work/$1-${2:-}.log")"
}
run a
run b 4
run b
grep -q "resuming from .*step_00000004" "$work/b-.log" || fail "no resume: $(cat "$work/b-.log")"
diff <(losses "$work/a.jsonl" | awk '$1 > 4') <(losses "$work/b.jsonl" | awk '$1 > 4') || fail "losses differ after step 4"
for f in "$work"/a/step_00000008/rank_*.bin; do
  cmp "$f" "$work/b/step_00000008/$(basename "$f")" || fail "final state differs in $(basename "$f")"
done
echo "PASS: 3D 2x2x2 resume is bit-identical (8 rank files compared)"
