#!/usr/bin/env bash
# Issue 6: a checkpoint saved with data 2 x ZeRO-2 (two ranks, optimizer state and gradients
# sharded) resumes on the same layout bit-identically: the losses after the checkpoint and
# both ranks' final checkpoint files equal those of an uninterrupted 2-rank run.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/ckpt_lib.sh"

run() {  # NAME LOG [args...]
  local name=$1 log=$2
  shift 2
  "${MPIEXEC[@]}" -n 2 "$trainer" train configs/debug/resume.yaml "${data_args[@]}" $(layout_args 2 1 1 2) \
    --set train.steps=24 --set checkpoint.every=0 --set "checkpoint.dir=$work/$name" --set "log.metrics=$work/$name.jsonl" \
    "$@" > "$work/$log.log" 2>&1 || fail "$log: $(cat "$work/$log.log")"
}
run a a
run b b1 --stop-at 12
[[ "$(complete_steps "$work/b")" == step_00000012 ]] || fail "no checkpoint at step 12: $(ls -A "$work/b")"
grep -q "zero: 2" "$work/b/step_00000012/manifest.yaml" || fail "the checkpoint does not record zero 2"
[[ $(grep -c "rank_0000[01].bin" "$work/b/step_00000012/manifest.yaml") -ge 2 ]] || fail "not one file per rank"
run b b2
expect_log b2 "resuming from $work/b/step_00000012 \(step 12, saved with data 2 x tensor 1 x pipeline 1, zero 2\)" "no resume"
diff <(losses "$work/a.jsonl" | awk '$1 > 12') <(losses "$work/b.jsonl" | awk '$1 > 12') || fail "losses differ after step 12"
[[ $(losses "$work/b.jsonl" | awk '$1 > 12' | wc -l) == 12 ]] || fail "the resumed run did not log steps 13..24"
for r in 0 1; do
  cmp "$work/a/step_00000024/rank_0000$r.bin" "$work/b/step_00000024/rank_0000$r.bin" || fail "final state of rank $r differs"
done
echo "PASS: data 2 x ZeRO-2 resume is bit-identical (losses of steps 13..24, both rank files)"
