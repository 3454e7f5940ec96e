#!/usr/bin/env bash
# Checkpoints never lost to pruning or to a second trainer (issue: hostile inputs, the classes
# that lose data). Case by case, each asserting the exit code, the message and what is on disk:
#  1. a fresh run (resume: never) in a folder holding another run's step_10 keeps what it
#     writes (keep 1), leaves the other run's checkpoint alone, says so, and `latest` follows it;
#  2. resume: auto then continues the run `latest` names, not the other run's higher step, and
#     notes that its learning-rate schedule moved (train.steps changed); run
#     again at or past its train.steps (or its --stop-at), it says there is nothing to train and
#     writes nothing;
#  3. after a corrupt newest checkpoint the run resumes from the older one, its own new saves
#     are never pruned in favour of the corrupt one, and the next resume follows `latest`;
#  4. once the loss is not finite, the last checkpoint with a finite loss is never pruned;
#  5. a second trainer on a checkpoint folder in use stops with exit 2 naming the holder's
#     pid and host, writes nothing there, and the first run finishes unharmed;
#  6. a lock left by a process that died is taken over and reported;
#  7. a .lock that is not a regular file is refused with exit 2.
# No case may change a file outside $work.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/ckpt_lib.sh"

mark_outside
ckpt_list() { ls -A "$1" | LC_ALL=C sort | tr '\n' ' '; }
small=(--set model.d_model=32 --set model.n_layer=1)

# 1. Another run's checkpoint in the folder, then a fresh run with keep 1.
train other "${small[@]}" --set train.steps=10 --set checkpoint.every=10 --set "checkpoint.dir=$work/c1" ||
  fail "case 1 setup: $(cat "$work/other.log")"
train fresh "${small[@]}" --set train.steps=3 --set checkpoint.every=0 --set checkpoint.keep=1 \
  --set checkpoint.resume=never --set "checkpoint.dir=$work/c1" || fail "case 1: $(cat "$work/fresh.log")"
expect_log fresh "checkpoint: saved $work/c1/step_00000003" "case 1: not saved"
expect_log fresh "holds 1 checkpoint of other runs \(newest step_00000010\); this run \([0-9a-f]{16}\) prunes only its own" \
  "case 1: no note about the other run"
[[ "$(ckpt_list "$work/c1")" == ".lock latest step_00000003 step_00000010 " ]] || fail "case 1: $(ckpt_list "$work/c1")"
[[ "$(cat "$work/c1/latest")" == step_00000003 ]] || fail "case 1: latest says $(cat "$work/c1/latest")"
"$trainer" ckpt inspect "$work/c1/step_00000003" > "$work/inspect1.log" 2>&1 || fail "case 1: step 3 does not verify"

# 2. resume: auto follows latest (this run), not the other run's step 10.
train again "${small[@]}" --set train.steps=4 --set checkpoint.every=0 --set checkpoint.keep=1 \
  --set "checkpoint.dir=$work/c1" || fail "case 2: $(cat "$work/again.log")"
expect_log again "resuming from $work/c1/step_00000003 " "case 2: did not resume from latest"
# Saved under train.steps 3, resumed under 4: the schedule moved, and the run says so.
expect_log again "^checkpoint: note: the learning-rate schedule differs from the checkpoint's \(train.steps 3 -> 4\): at step 3 its lr was [0-9.e+-]+, this run's is [0-9.e+-]+$" \
  "case 2: a resume under another train.steps did not note the schedule change"
[[ "$(ckpt_list "$work/c1")" == ".lock latest step_00000004 step_00000010 " ]] || fail "case 2: $(ckpt_list "$work/c1")"
for steps in 4 3; do
  train "done$steps" "${small[@]}" --set train.steps=$steps --set checkpoint.every=0 --set checkpoint.keep=1 \
    --set "checkpoint.dir=$work/c1" || fail "case 2, steps $steps: $(cat "$work/done$steps.log")"
  said="^done: nothing to train: $work/c1/step_00000004 is at step 4, (which is|past) train.steps $steps; to train on"
  expect_log "done$steps" "$said" "case 2: a finished run, steps $steps, does not say there is nothing to train"
  ! grep -q "^step " "$work/done$steps.log" || fail "case 2: a finished run trained: $(cat "$work/done$steps.log")"
  [[ "$(ckpt_list "$work/c1")" == ".lock latest step_00000004 step_00000010 " ]] ||
    fail "case 2, steps $steps: $(ckpt_list "$work/c1")"
done
expect_log done3 "at step 4, past train.steps 3" "case 2: steps 3 is not called past"
# --stop-at the checkpoint has reached (a rerun of a job that stopped there): nothing to train,
# nothing written, rather than one more step.
for stop in 4 2; do
  train "stop$stop" "${small[@]}" --set train.steps=9 --set checkpoint.every=0 --set checkpoint.keep=1 \
    --set "checkpoint.dir=$work/c1" --stop-at $stop || fail "case 2, --stop-at $stop: $(cat "$work/stop$stop.log")"
  expect_log "stop$stop" "^done: nothing to train: $work/c1/step_00000004 is at step 4, (which is|past) --stop-at $stop; to train on, raise --stop-at or leave it out" \
    "case 2: --stop-at $stop at step 4 does not say there is nothing to train"
  ! grep -q "^step " "$work/stop$stop.log" || fail "case 2: --stop-at $stop trained: $(cat "$work/stop$stop.log")"
  [[ "$(ckpt_list "$work/c1")" == ".lock latest step_00000004 step_00000010 " ]] ||
    fail "case 2, --stop-at $stop: $(ckpt_list "$work/c1")"
done

# 3. A corrupt newest checkpoint: resume from the older one; its new saves survive pruning.
train run3 "${small[@]}" --set train.steps=10 --set checkpoint.every=5 --set checkpoint.keep=2 \
  --set "checkpoint.dir=$work/c3" || fail "case 3 setup: $(cat "$work/run3.log")"
flip_byte "$work/c3/step_00000010/rank_00000.bin" 100
train run3b "${small[@]}" --set train.steps=8 --set checkpoint.every=4 --set checkpoint.keep=1 \
  --set "checkpoint.dir=$work/c3" || fail "case 3: $(cat "$work/run3b.log")"
expect_log run3b "skipping $work/c3/step_00000010" "case 3: the corrupt checkpoint was not reported"
expect_log run3b "resuming from $work/c3/step_00000005 " "case 3: did not resume from step 5"
expect_log run3b "checkpoint: saved $work/c3/step_00000008" "case 3: step 8 not saved"
[[ -f "$work/c3/step_00000008/manifest.yaml" ]] || fail "case 3: step 8 was pruned: $(ckpt_list "$work/c3")"
[[ "$(cat "$work/c3/latest")" == step_00000008 ]] || fail "case 3: latest says $(cat "$work/c3/latest")"
[[ ! -e "$work/c3/step_00000005" ]] || fail "case 3: step 5 should be pruned with keep 1: $(ckpt_list "$work/c3")"
train run3c "${small[@]}" --set train.steps=9 --set checkpoint.every=0 --set "checkpoint.dir=$work/c3" ||
  fail "case 3 rerun: $(cat "$work/run3c.log")"
expect_log run3c "resuming from $work/c3/step_00000008 " "case 3: the rerun did not follow latest"

# 4. A diverging run (huge learning rate): the last checkpoint with a finite loss stays.
train nan "${small[@]}" --set train.steps=8 --set checkpoint.every=1 --set checkpoint.keep=1 \
  --set train.optimizer.lr=1e12 --set train.lr_schedule.warmup_steps=0 --set train.optimizer.grad_clip=0 \
  --set train.on_nonfinite=skip \
  --set "checkpoint.dir=$work/c4" || fail "case 4: $(cat "$work/nan.log")"
last_finite=$(grep -E "^step +[0-9]+/8 \| loss [0-9.]+ .*\| norm [0-9.]+ " "$work/nan.log" | tail -1 |
              sed -E 's/^step +([0-9]+).*/\1/')
grep -Eq "^step +[0-9]+/8 \| loss (-?nan|-?inf)" "$work/nan.log" || fail "case 4: the loss never diverged: $(cat "$work/nan.log")"
[[ -n "$last_finite" ]] || fail "case 4: no finite step: $(cat "$work/nan.log")"
keep_dir=$(printf "step_%08d" "$last_finite")
[[ -f "$work/c4/$keep_dir/manifest.yaml" ]] || fail "case 4: the last finite checkpoint $keep_dir was pruned: $(ckpt_list "$work/c4")"
[[ -f "$work/c4/step_00000008/manifest.yaml" ]] || fail "case 4: the newest checkpoint is missing: $(ckpt_list "$work/c4")"
[[ "$(cat "$work/c4/latest")" == step_00000008 ]] || fail "case 4: latest says $(cat "$work/c4/latest")"

# 5. Two trainers, one folder.
train_bg first --set train.steps=400 --set checkpoint.every=0 --set "checkpoint.dir=$work/c5"
for _ in $(seq 100); do grep -q "^step " "$work/first.log" 2>/dev/null && break; sleep 0.1; done
grep -q "^step " "$work/first.log" || fail "case 5: the first run did not start: $(cat "$work/first.log")"
rc=0
train second --set train.steps=3 --set "checkpoint.dir=$work/c5" || rc=$?
[[ $rc == 2 ]] || fail "case 5: second trainer exit code $rc, want 2: $(cat "$work/second.log")"
expect_log second "^error: checkpoint.dir: $work/c5 is in use by trainer, pid $bg_pid on host $(hostname) since " \
  "case 5: the holder is not named"
! grep -q "^step " "$work/second.log" || fail "case 5: the second trainer trained"
[[ "$(ckpt_list "$work/c5")" == ".lock " ]] || fail "case 5: the second trainer wrote into the folder: $(ckpt_list "$work/c5")"
kill -TERM "$bg_pid"
wait "$bg_pid" || fail "case 5: the first run did not stop cleanly: $(cat "$work/first.log")"
expect_log first "checkpoint: saved $work/c5/step_" "case 5: the first run did not save on SIGTERM"
[[ ! -s "$work/c5/.lock" ]] || fail "case 5: the lock was not released: $(cat "$work/c5/.lock")"

# 6. A stale lock (its holder died): taken over, reported.
mkdir -p "$work/c6"
echo "pid 999999 on host gone since 2026-01-01T00:00:00Z" > "$work/c6/.lock"
train stale "${small[@]}" --set train.steps=2 --set "checkpoint.dir=$work/c6" || fail "case 6: $(cat "$work/stale.log")"
expect_log stale "left by pid 999999 on host gone since 2026-01-01T00:00:00Z, which ended without releasing it; taken over" \
  "case 6: the stale lock was not reported"

# 7. A .lock that is a directory.
mkdir -p "$work/c7/.lock"
rc=0
train notfile "${small[@]}" --set train.steps=2 --set "checkpoint.dir=$work/c7" || rc=$?
[[ $rc == 2 ]] || fail "case 7: exit code $rc, want 2: $(cat "$work/notfile.log")"
expect_log notfile "^error: checkpoint.dir: .*c7/.lock" "case 7: unclear error"

expect_outside_unchanged
echo "PASS: 7 cases: lineages kept apart, latest followed, corrupt and NaN checkpoints never displace good ones, one trainer per folder"
