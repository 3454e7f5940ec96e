#!/usr/bin/env bash
# A checkpoint of a differently shaped model (d_model 64 -> 128, n_layer 2 -> 3) is an error
# (exit 2) naming the first mismatching tensor, in auto mode as with an explicit path; nothing
# is trained and the checkpoint is left as it was.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/ckpt_lib.sh"

train base --set train.steps=10 --set "checkpoint.dir=$work/ckpt" || fail "base run: $(cat "$work/base.log")"
before=$(ls -A "$work/ckpt"; md5sum "$work"/ckpt/step_00000010/*)

check_refused() {  # LOG PATTERN [--set ...]
  local log=$1 pattern=$2 rc=0
  shift 2
  train "$log" --set train.steps=20 --set "checkpoint.dir=$work/ckpt" --set "log.metrics=$work/$log.jsonl" "$@" || rc=$?
  [[ $rc == 2 ]] || fail "$log: exit code $rc, want 2: $(cat "$work/$log.log")"
  expect_log "$log" "$pattern" "$log: the message does not name the mismatching tensor"
  [[ ! -s "$work/$log.jsonl" ]] || fail "$log: trained anyway"
}
check_refused wider "^error: checkpoint $work/ckpt/step_00000010: tensor wte.weight has shape \[320, 64\] but the recipe's model needs \[320, 128\]" \
  --set model.d_model=128
check_refused deeper "^error: checkpoint $work/ckpt/step_00000010 has no tensor h\.2\.ln_1\.weight \[64\] that the recipe's model needs" \
  --set model.n_layer=3
check_refused shallower "^error: checkpoint $work/ckpt/step_00000010 has tensor h\.1\.ln_1\.weight \[64\] that the recipe's model lacks" \
  --set model.n_layer=1
check_refused explicit "^error: checkpoint $work/ckpt/step_00000010: tensor wte.weight has shape \[320, 64\]" \
  --set model.d_model=128 --set "checkpoint.resume=$work/ckpt/step_00000010"
[[ "$(ls -A "$work/ckpt"; md5sum "$work"/ckpt/step_00000010/*)" == "$before" ]] || fail "the checkpoint directory changed"
echo "PASS: shape mismatches exit 2 naming the first mismatching tensor"
