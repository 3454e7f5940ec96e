#!/usr/bin/env bash
# Saving fails (as root, permissions do not stop writes, so): (1) checkpoint.dir lies under a
# regular file: found before training starts (a probe write), a clear error naming the
# directory, exit code 2. (2) A later save hits "file
# too large" (RLIMIT_FSIZE, what a full disk looks like to write()): exit 2 naming the file;
# the earlier checkpoint stays complete, verified, pointed to by `latest` and not pruned even
# with keep 1, no temporary directory is left, and a rerun resumes from it. Documented
# behaviour (checkpoint_writer.h): training stops there with exit code 2.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/ckpt_lib.sh"

touch "$work/file"
rc=0
train under_file --set train.steps=3 --set checkpoint.every=0 --set "checkpoint.dir=$work/file/ckpt" || rc=$?
[[ $rc == 2 ]] || fail "checkpoint.dir under a file: exit code $rc, want 2: $(cat "$work/under_file.log")"
want="^error: checkpoint.dir: $work/file/ckpt is not writable: cannot create .*Not a directory; "
want+="fix it or set checkpoint.dir to another directory"
expect_log under_file "$want" "checkpoint.dir under a file: unclear error"
! grep -q "^step " "$work/under_file.log" || fail "trained before reporting the unwritable directory"

# d_model 192: rank files of about 11 MiB, above the file size limit used below.
steps=(--set train.steps=20 --set checkpoint.every=10 --set checkpoint.keep=1 --set "checkpoint.dir=$work/ckpt"
       --set model.d_model=192)
train first "${steps[@]}" --stop-at 10 || fail "first run: $(cat "$work/first.log")"
[[ "$(complete_steps "$work/ckpt")" == step_00000010 ]] || fail "first run saved: $(ls -A "$work/ckpt")"
before=$(md5sum "$work"/ckpt/step_00000010/*)

# An 8 MiB file size limit (MPI's start-up needs 4) makes the save at step 20 fail with EFBIG.
rc=0
(trap '' XFSZ; ulimit -f 8192; exec "$trainer" train configs/debug/resume.yaml "${data_args[@]}" "${steps[@]}" \
  > "$work/full.log" 2>&1) || rc=$?
[[ $rc == 2 ]] || fail "failing save: exit code $rc, want 2: $(cat "$work/full.log")"
expect_log full "resuming from $work/ckpt/step_00000010 " "the second run did not resume"
want="^error: checkpoint.dir: writing $work/ckpt/step_00000020 failed: "
want+="cannot write $work/ckpt/.tmp_step_00000020.[0-9a-f]{16}/rank_00000.bin: File too large; "
want+="this run's previous checkpoint $work/ckpt/step_00000010 is intact; training stops here"
expect_log full "$want" "failing save: unclear error"
! grep -q "checkpoint: saved" "$work/full.log" || fail "failing save: reported as saved"
[[ "$(ls -A "$work/ckpt" | LC_ALL=C sort | tr '\n' ' ')" == ".lock latest step_00000010 " ]] || fail "after the failed save: $(ls -A "$work/ckpt")"
[[ "$(cat "$work/ckpt/latest")" == step_00000010 ]] || fail "latest changed to $(cat "$work/ckpt/latest")"
[[ "$(md5sum "$work"/ckpt/step_00000010/*)" == "$before" ]] || fail "the earlier checkpoint changed"
"$trainer" ckpt inspect "$work/ckpt" > "$work/inspect.log" 2>&1 || fail "the earlier checkpoint does not verify: $(cat "$work/inspect.log")"

train rerun "${steps[@]}" || fail "rerun: $(cat "$work/rerun.log")"
expect_log rerun "resuming from $work/ckpt/step_00000010 " "the rerun did not resume from the earlier checkpoint"
[[ "$(ls -A "$work/ckpt" | LC_ALL=C sort | tr '\n' ' ')" == ".lock latest step_00000020 " ]] || fail "after the rerun: $(ls -A "$work/ckpt")"
echo "PASS: unwritable and full checkpoint directories exit 2 with a clear error; the earlier checkpoint survives"
