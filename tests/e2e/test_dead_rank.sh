#!/usr/bin/env bash
# A rank that dies does not leave the job hanging:
# 1. kill -9 of one rank: the launcher ends the whole job non-zero and names the rank;
# 2. a rank that hangs (SIGSTOP) while the others wait in a collective: after
#    parallel.timeout_s the waiting rank reports the stalled operation and aborts the job.
source "$(dirname "$0")/lib.sh"
make_byte_data "$work/data"
args=(configs/debug/layouts.yaml $(layout_args 2 1 1 0) --set train.steps=100000 --set "data.train=$work/data/train_*.bin"
      --set checkpoint.dir= --set log.every=1 --set "log.metrics=$work/m.jsonl")

# rank_pid N: the pid of the trainer process with world rank N.
rank_pid() {
  for p in $(pgrep -f "layouts.yaml.*$work"); do
    [[ -r /proc/$p/environ ]] && tr '\0' '\n' < /proc/$p/environ | grep -qx "OMPI_COMM_WORLD_RANK=$1" && { echo $p; return; }
  done
}
wait_training() { for _ in $(seq 500); do [[ -s "$work/m.jsonl" ]] && return; sleep 0.02; done; fail "training did not start"; }

for scenario in kill stop; do
  rm -f "$work/m.jsonl"
  extra=()
  [[ $scenario == stop ]] && extra=(--set parallel.timeout_s=3)
  start=$(date +%s)
  "${MPIEXEC[@]}" -n 2 "$trainer" train "${args[@]}" "${extra[@]}" > "$work/$scenario.log" 2>&1 &
  job=$!
  wait_training
  victim=$(rank_pid 1)
  [[ -n "$victim" ]] || fail "rank 1 not found"
  if [[ $scenario == kill ]]; then kill -9 "$victim"; else kill -STOP "$victim"; fi
  rc=0
  timeout 60 tail --pid=$job -f /dev/null || fail "$scenario: the job did not end within 60 s"
  wait $job || rc=$?
  [[ $scenario == stop ]] && kill -9 "$victim" 2>/dev/null || true
  elapsed=$(( $(date +%s) - start ))
  [[ $rc -ne 0 ]] || fail "$scenario: the job exited 0"
  if [[ $scenario == kill ]]; then
    grep -Eq "rank 1|process rank 1" "$work/kill.log" || fail "kill: the message does not name rank 1: $(cat "$work/kill.log")"
  else
    grep -q "did not complete within 3 s" "$work/stop.log" || fail "stop: no timeout message: $(cat "$work/stop.log")"
  fi
  echo "$scenario: job ended with code $rc after ${elapsed}s"
done
echo "PASS"
