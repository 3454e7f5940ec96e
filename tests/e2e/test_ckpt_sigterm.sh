#!/usr/bin/env bash
# Preemption. SIGTERM at a random step: the run finishes that step, writes a checkpoint there,
# says so and exits 0; resuming finishes the run with losses at every step and final weights
# bit-identical to an uninterrupted run. SIGINT does the same. Two quick SIGTERMs: the second
# ends the process at once (killed by the signal, no "stopping" message).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/ckpt_lib.sh"
run=(--set train.steps=150 --set checkpoint.every=0)

train a "${run[@]}" --set "checkpoint.dir=$work/a" --set "log.metrics=$work/a.jsonl" || fail "uninterrupted run: $(cat "$work/a.log")"

# last_step METRICS: the newest step logged so far (0 before the first).
last_step() { ( (losses "$1" 2>/dev/null || true) | tail -1 | cut -d' ' -f1 ); }

stopped=0
for attempt in 1 2 3; do
  rm -rf "$work/b" "$work/b.jsonl"
  train_bg b1 "${run[@]}" --set "checkpoint.dir=$work/b" --set "log.metrics=$work/b.jsonl"
  pid=$bg_pid
  target=$((5 + RANDOM % 60))
  while kill -0 $pid 2>/dev/null; do
    last=$(last_step "$work/b.jsonl")
    [[ ${last:-0} -ge $target ]] && break
    sleep 0.005
  done
  kill -TERM $pid 2>/dev/null || true
  rc=0
  wait $pid || rc=$?
  [[ $rc == 0 ]] || fail "SIGTERM: exit code $rc, want 0: $(cat "$work/b1.log")"
  if grep -q "on signal 15" "$work/b1.log"; then stopped=1; break; fi
done
[[ $stopped == 1 ]] || fail "the run finished before SIGTERM arrived (3 attempts)"
s=$(sed -nE 's/^stopping after step ([0-9]+) on signal 15 \(checkpoint saved\); resume with the same command$/\1/p' "$work/b1.log")
[[ -n "$s" ]] || fail "no stopping message: $(cat "$work/b1.log")"
echo "SIGTERM after step $s"
(( s < 150 )) || fail "stopped at the last step"
[[ "$(complete_steps "$work/b")" == "step_$(printf %08d "$s")" ]] || fail "checkpoints after SIGTERM: $(ls "$work/b")"
[[ "$(last_step "$work/b.jsonl")" == "$s" ]] || fail "steps after the signal's step were logged"

train b2 "${run[@]}" --set "checkpoint.dir=$work/b" --set "log.metrics=$work/b.jsonl" || fail "resumed run: $(cat "$work/b2.log")"
expect_log b2 "resuming from $work/b/step_$(printf %08d "$s") " "did not resume from the SIGTERM checkpoint"
diff <(losses "$work/a.jsonl") <(losses "$work/b.jsonl") > /dev/null || fail "losses of the interrupted and resumed run differ"
cmp "$work/a/step_00000150/rank_00000.bin" "$work/b/step_00000150/rank_00000.bin" || fail "final weights differ"

# SIGINT (Ctrl-C) is handled the same way.
train_bg int --set train.steps=1000 --set checkpoint.every=0 --set "checkpoint.dir=$work/int" --set "log.metrics=$work/int.jsonl"
pid=$bg_pid
while kill -0 $pid 2>/dev/null && [[ $(last_step "$work/int.jsonl") -lt 3 ]]; do sleep 0.005; done
kill -INT $pid
rc=0
wait $pid || rc=$?
[[ $rc == 0 ]] || fail "SIGINT: exit code $rc, want 0: $(cat "$work/int.log")"
s_int=$(sed -nE 's/^stopping after step ([0-9]+) on signal 2 \(checkpoint saved\).*/\1/p' "$work/int.log")
[[ -n "$s_int" && "$(complete_steps "$work/int")" == "step_$(printf %08d "$s_int")" ]] || fail "SIGINT: $(cat "$work/int.log")"

# Two SIGTERMs: a slower model (about 0.1 s a step) so both land within one step.
train_bg c --set train.steps=1000 --set checkpoint.every=0 --set model.d_model=256 --set model.n_layer=4 \
  --set "checkpoint.dir=$work/c" --set "log.metrics=$work/c.jsonl"
pid=$bg_pid
while kill -0 $pid 2>/dev/null && [[ $(last_step "$work/c.jsonl") -lt 2 ]]; do sleep 0.01; done
kill -TERM $pid
sleep 0.02
kill -TERM $pid 2>/dev/null || true
rc=0
wait $pid || rc=$?
[[ $rc == 143 ]] || fail "two SIGTERMs: exit status $rc, want 143 (killed by SIGTERM): $(cat "$work/c.log")"
! grep -q "stopping after step" "$work/c.log" || fail "two SIGTERMs: the run stopped gracefully instead of at once"
(( $(last_step "$work/c.jsonl") < 1000 )) || fail "two SIGTERMs: the run finished"
echo "PASS: SIGTERM at step $s (SIGINT at $s_int) checkpoints and exits 0; the resumed run is bit-identical;" \
  "a second SIGTERM exits at once"
