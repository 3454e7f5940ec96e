#!/usr/bin/env bash
# Bad steps (train.on_nonfinite, train.spike, train.max_rollbacks) under deterministic fault
# injection (TRAINER_FAULT_NAN_STEP, TRAINER_FAULT_SPIKE_STEP):
# - stop (the default): exit 4 at the NaN step, naming it and the policy; an event record;
# - skip: the step is counted and logged, and weights and optimizer state stay as they were
#   (its checkpoint's rank file equals the previous step's);
# - rollback, one process and data 2 x pipeline 2: the run goes back to the newest checkpoint
#   and skips the batches since; after that it is bit-identical (losses and final rank files)
#   to a run resumed from that checkpoint with its data position moved past those batches;
# - spike warn applies the real update (final weights equal a run without the fault), spike
#   rollback rolls back; a rollback past train.max_rollbacks stops with exit 4;
# - validate refuses rollback without checkpoint.dir and a spike factor in (0, 1].
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/ckpt_lib.sh"
mark_outside
steps=(--set train.steps=12 --set checkpoint.keep=0)

# fault NAME ENV... -- ARGS: one run of configs/debug/resume.yaml with the fault variables set;
# its exit code in rc, metrics in $work/NAME.jsonl, checkpoints in $work/NAME.
fault() {
  local name="$1" envs=()
  shift
  while [[ "$1" != -- ]]; do envs+=("$1"); shift; done
  shift
  rc=0
  env "${envs[@]}" "$trainer" train configs/debug/resume.yaml "${data_args[@]}" "${steps[@]}" \
    --set "checkpoint.dir=$work/$name" --set "log.metrics=$work/$name.jsonl" "$@" > "$work/$name.log" 2>&1 || rc=$?
}
# events FILE: the bad-step event records of a metrics file.
events() { grep '"event"' "$1" || true; }
# after_rollback FILE: the "step loss" lines logged after the (last) rollback event.
after_rollback() { tac "$1" | sed '/"action": "rollback"/,$d' | tac | losses /dev/stdin; }
# position_moved SRC DST STEPS GLOBAL_BATCH: copies checkpoint SRC to DST with its data position
# moved STEPS global batches on (a run that never saw those batches).
position_moved() {
  mkdir -p "$(dirname "$2")"
  cp -r "$1" "$2"
  local pos
  pos=$(sed -nE 's/.*position: ([0-9]+).*/\1/p' "$2/manifest.yaml")
  [[ -n "$pos" ]] || fail "no data position in $2/manifest.yaml"
  sed -i -E "s/position: $pos/position: $((pos + $3 * $4))/" "$2/manifest.yaml"
}

# 1. stop.
fault stop TRAINER_FAULT_NAN_STEP=6 --
[[ $rc == 4 ]] || fail "stop: exit code $rc, want 4: $(cat "$work/stop.log")"
expect_log stop "stopping at step 6: loss nan is not finite \(train.on_nonfinite: stop\); no update applied; newest checkpoint: none" \
  "stop: no message"
[[ "$(events "$work/stop.jsonl")" == *'"step": 6,'*'"event": "nonfinite", "action": "stop"'* ]] ||
  fail "stop: event record: $(events "$work/stop.jsonl")"
[[ "$(losses "$work/stop.jsonl" | tail -1)" == "5 "* ]] || fail "stop: steps after 5 were logged"

# 2. skip: checkpoints at steps 5 and 6 hold the same weights and optimizer state.
fault skip TRAINER_FAULT_NAN_STEP=6 -- --set train.on_nonfinite=skip --set checkpoint.every=1
[[ $rc == 0 ]] || fail "skip: exit code $rc: $(cat "$work/skip.log")"
expect_log skip "step 6: skipped: loss nan is not finite \(train.on_nonfinite: skip\); no update, the step counts" "skip: no message"
[[ "$(events "$work/skip.jsonl")" == *'"event": "nonfinite", "action": "skip"'* ]] || fail "skip: no event record"
losses "$work/skip.jsonl" | grep -q "^6 null$" || fail "skip: step 6 not logged with a null loss"
cmp "$work/skip/step_00000005/rank_00000.bin" "$work/skip/step_00000006/rank_00000.bin" ||
  fail "skip: step 6 changed the weights or the optimizer state"
! cmp -s "$work/skip/step_00000006/rank_00000.bin" "$work/skip/step_00000007/rank_00000.bin" ||
  fail "skip: step 7 did not train"

# 3. rollback, one process: NaN at step 7, newest checkpoint step 4, batches of steps 5-7 skipped.
fault rb TRAINER_FAULT_NAN_STEP=7 -- --set train.on_nonfinite=rollback --set checkpoint.every=4
[[ $rc == 0 ]] || fail "rollback: exit code $rc: $(cat "$work/rb.log")"
expect_log rb "step 7: loss nan is not finite \(train.on_nonfinite: rollback\): rolled back to step_00000004 \(step 4\); the batches of steps 5-7 are skipped \(rollback 1 of at most 3\)" \
  "rollback: no message"
[[ "$(events "$work/rb.jsonl")" == *'"rolled_back_to": 4, "rollbacks": 1, "event": "nonfinite", "action": "rollback"'* ]] ||
  fail "rollback: event record: $(events "$work/rb.jsonl")"
position_moved "$work/rb/step_00000004" "$work/rb_ref/step_00000004" 3 16
"$trainer" train configs/debug/resume.yaml "${data_args[@]}" "${steps[@]}" --set checkpoint.every=4 \
  --set "checkpoint.dir=$work/rb_ref" --set "log.metrics=$work/rb_ref.jsonl" > "$work/rb_ref.log" 2>&1 ||
  fail "rollback reference: $(cat "$work/rb_ref.log")"
expect_log rb_ref "resuming from $work/rb_ref/step_00000004 " "rollback reference did not resume"
diff <(after_rollback "$work/rb.jsonl") <(losses "$work/rb_ref.jsonl") || fail "rollback: losses after it differ from the reference"
[[ $(after_rollback "$work/rb.jsonl" | wc -l) == 8 ]] || fail "rollback: steps 5-12 not all logged after it"
cmp "$work/rb/step_00000012/rank_00000.bin" "$work/rb_ref/step_00000012/rank_00000.bin" ||
  fail "rollback: final state differs from the reference"

# 4. spike warn: the update is the real one, so the final weights equal a run without a fault.
spike=(--set train.spike.factor=5 --set train.spike.window=3)
fault plain -- --set checkpoint.every=0
fault warn TRAINER_FAULT_SPIKE_STEP=9:50 -- "${spike[@]}" --set checkpoint.every=0
[[ $rc == 0 ]] || fail "spike warn: exit code $rc: $(cat "$work/warn.log")"
expect_log warn "step 9: warning: loss [0-9.]+ > 5 x mean [0-9.]+ over 3 steps \(train.spike.action: warn\); update applied" \
  "spike warn: no message"
[[ $(events "$work/warn.jsonl" | wc -l) == 1 ]] || fail "spike warn: events: $(events "$work/warn.jsonl")"
cmp "$work/plain/step_00000012/rank_00000.bin" "$work/warn/step_00000012/rank_00000.bin" ||
  fail "spike warn: the update was not the real one"

# 5. spike rollback, then a second spike past train.max_rollbacks 1: stop (at step 12: the window
# restarts empty after the rollback to step 8 and is full again after step 11).
fault spk TRAINER_FAULT_SPIKE_STEP=9:50,12:50 -- "${spike[@]}" --set train.spike.action=rollback \
  --set checkpoint.every=4 --set train.max_rollbacks=1
[[ $rc == 4 ]] || fail "max_rollbacks: exit code $rc, want 4: $(cat "$work/spk.log")"
expect_log spk "step 9: loss [0-9.]+ > 5 x mean [0-9.]+ over 3 steps \(train.spike.action: rollback\): rolled back to step_00000008" \
  "spike rollback: no message"
expect_log spk "stopping at step 12: loss .* \(train.spike.action: rollback\); that would be rollback 2 and train.max_rollbacks is 1" \
  "max_rollbacks: no message"

# 6. rollback on data 2 x pipeline 2: NaN at step 5, newest checkpoint step 3.
mpi_run() {  # NAME [VAR...]: the variables are passed to every rank
  local name="$1" v xs=()
  shift
  for v in "$@"; do xs+=(-x "$v"); done
  "${MPIEXEC[@]}" "${xs[@]}" -n 4 "$trainer" train configs/debug/layouts.yaml $(layout_args 2 1 2 1) \
    --set train.steps=8 --set checkpoint.every=3 --set train.on_nonfinite=rollback \
    --set "data.train=$work/data/train_*.bin" --set "checkpoint.dir=$work/$name" --set "log.metrics=$work/$name.jsonl" \
    > "$work/$name.log" 2>&1 || fail "$name: $(cat "$work/$name.log")"
}
TRAINER_FAULT_NAN_STEP=5 mpi_run rb4 TRAINER_FAULT_NAN_STEP
expect_log rb4 "step 5: .*rolled back to step_00000003 \(step 3\); the batches of steps 4-5 are skipped" "data 2 x pipeline 2: no rollback"
position_moved "$work/rb4/step_00000003" "$work/rb4_ref/step_00000003" 2 16
mpi_run rb4_ref
diff <(after_rollback "$work/rb4.jsonl") <(losses "$work/rb4_ref.jsonl") || fail "data 2 x pipeline 2: losses after the rollback differ"
for f in "$work"/rb4/step_00000008/rank_*.bin; do
  cmp "$f" "$work/rb4_ref/step_00000008/$(basename "$f")" || fail "data 2 x pipeline 2: final state differs in $(basename "$f")"
done

# 7. Recipes that cannot work.
expect_refusals 20 \
  "--set train.on_nonfinite=rollback: train.on_nonfinite: rollback returns to the newest checkpoint but checkpoint.dir is empty; valid: set checkpoint.dir|validate configs/debug/resume.yaml --set train.on_nonfinite=rollback --set checkpoint.dir= --set checkpoint.every=0" \
  "train.spike.factor: 0.5 would call every step a spike|validate configs/debug/resume.yaml --set train.spike.factor=0.5" \
  "train.spike.action: unknown value \"stop\".*valid: one of: warn, skip, rollback|validate configs/debug/resume.yaml --set train.spike.action=stop"
expect_outside_unchanged
echo "PASS: stop, skip, rollback (1 process and data 2 x pipeline 2, bit-identical to a run that never saw the batches), spike warn and rollback, max_rollbacks, $refusals refusals"
