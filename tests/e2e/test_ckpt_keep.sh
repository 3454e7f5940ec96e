#!/usr/bin/env bash
# checkpoint.keep and the `latest` pointer: with keep 2 and a save every 10 steps, exactly the
# two newest complete checkpoints remain (no temporary or moved-aside directory is left) and
# `latest` names the newest, also after a resumed run adds more; keep 0 keeps every one.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/ckpt_lib.sh"

# only_entries DIR EXPECTED: the names in DIR (hidden ones included), sorted, are exactly EXPECTED.
only_entries() {
  local got
  got=$(ls -A "$1" | LC_ALL=C sort | tr '\n' ' ')
  [[ "$got" == "$2 " ]] || fail "$1 holds '$got', want '$2 '"
}

train k1 --set train.steps=50 --set checkpoint.every=10 --set checkpoint.keep=2 --set "checkpoint.dir=$work/k" ||
  fail "keep 2 run: $(cat "$work/k1.log")"
[[ $(grep -c "checkpoint: saved" "$work/k1.log") == 5 ]] || fail "expected 5 saves: $(cat "$work/k1.log")"
only_entries "$work/k" ".lock latest step_00000040 step_00000050"
[[ "$(complete_steps "$work/k" | tr '\n' ' ')" == "step_00000040 step_00000050 " ]] || fail "incomplete checkpoints kept"
[[ "$(cat "$work/k/latest")" == "step_00000050" ]] || fail "latest says '$(cat "$work/k/latest")', want step_00000050"

# A resumed run to step 70 saves 60 and 70 and prunes 40 and 50.
train k2 --set train.steps=70 --set checkpoint.every=10 --set checkpoint.keep=2 --set "checkpoint.dir=$work/k" ||
  fail "resumed keep 2 run: $(cat "$work/k2.log")"
expect_log k2 "resuming from $work/k/step_00000050 " "did not resume from the newest checkpoint"
only_entries "$work/k" ".lock latest step_00000060 step_00000070"
[[ "$(cat "$work/k/latest")" == "step_00000070" ]] || fail "latest says '$(cat "$work/k/latest")', want step_00000070"
"$trainer" ckpt inspect "$work/k/$(cat "$work/k/latest")" > "$work/inspect.log" 2>&1 || fail "latest does not verify: $(cat "$work/inspect.log")"
grep -q "^step: 70 " "$work/inspect.log" || fail "inspect of latest: $(cat "$work/inspect.log")"

train all --set train.steps=30 --set checkpoint.every=10 --set checkpoint.keep=0 --set "checkpoint.dir=$work/all" ||
  fail "keep 0 run: $(cat "$work/all.log")"
only_entries "$work/all" ".lock latest step_00000010 step_00000020 step_00000030"
[[ "$(cat "$work/all/latest")" == "step_00000030" ]] || fail "latest (keep 0) says '$(cat "$work/all/latest")'"
echo "PASS: keep 2 leaves the two newest, keep 0 all; latest names the newest"
