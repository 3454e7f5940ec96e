#!/usr/bin/env bash
# Hang reports (parallel/hang_report.h):
# 1. kill -USR1 on one rank of a running data 2 x pipeline 2 job prints that rank's report
#    (named by its coordinates, what it waits for or that it computes, the last completed
#    operation per group) and the job goes on to finish with exit code 0;
# 2. a rank stopped (SIGSTOP) while the others wait: after parallel.timeout_s every other rank
#    prints what it waits for (op, group, sequence number, peer, bytes, how long), and rank 0
#    prints a summary of who waits for whom naming the silent rank, before the job aborts.
source "$(dirname "$0")/lib.sh"
make_byte_data "$work/data"
args=(configs/debug/layouts.yaml $(layout_args 2 1 2 0) --set "data.train=$work/data/train_*.bin"
      --set checkpoint.dir= --set log.every=1 --set "log.metrics=$work/m.jsonl")

# rank_pid N: the pid of the trainer process with world rank N.
rank_pid() {
  local p
  for p in $(pgrep -f "layouts.yaml.*$work"); do
    [[ -r /proc/$p/environ ]] && tr '\0' '\n' < /proc/$p/environ | grep -qx "OMPI_COMM_WORLD_RANK=$1" && { echo $p; return; }
  done
}
# wait_step N: until the metrics file has step N.
wait_step() {
  for _ in $(seq 1500); do
    grep -q "\"step\": $1," "$work/m.jsonl" 2>/dev/null && return
    sleep 0.02
  done
  fail "training did not reach step $1"
}

# 1. SIGUSR1.
"${MPIEXEC[@]}" -n 4 "$trainer" train "${args[@]}" --set train.steps=400 > "$work/usr1.log" 2>&1 &
job=$!
wait_step 3
victim=$(rank_pid 2)
[[ -n "$victim" ]] || fail "rank 2 not found"
kill -USR1 "$victim"
rc=0
wait $job || rc=$?
[[ $rc == 0 ]] || fail "SIGUSR1: the job exited $rc: $(cat "$work/usr1.log")"
grep -q "^report on SIGUSR1; training goes on (rank 2 (data 0, tensor 0, pipeline 1), pid $victim" "$work/usr1.log" ||
  fail "SIGUSR1: no report header: $(cat "$work/usr1.log")"
grep -Eq "^rank 2: (waiting [0-9.]+ s in [a-z_]+ #[0-9]+ on the [a-z ()]+ group|not waiting on communication)" "$work/usr1.log" ||
  fail "SIGUSR1: no state line: $(cat "$work/usr1.log")"
grep -Eq "^rank 2: last completed: .*pipeline" "$work/usr1.log" || fail "SIGUSR1: no last completed operations"
grep -Eq "^step +400/400" "$work/usr1.log" ||
  fail "SIGUSR1: training did not go on to the end: $(cat "$work/usr1.log")"
[[ $(grep -c "report on SIGUSR1" "$work/usr1.log") == 1 ]] || fail "SIGUSR1: other ranks reported too"

# 2. A stopped rank.
rm -f "$work/m.jsonl"
"${MPIEXEC[@]}" -n 4 "$trainer" train "${args[@]}" --set train.steps=100000 --set parallel.timeout_s=3 \
  > "$work/stop.log" 2>&1 &
job=$!
wait_step 2
victim=$(rank_pid 3)
[[ -n "$victim" ]] || fail "rank 3 not found"
kill -STOP "$victim"
rc=0
timeout 90 tail --pid=$job -f /dev/null || fail "stop: the job did not end within 90 s"
wait $job || rc=$?
kill -9 "$victim" 2>/dev/null || true
[[ $rc != 0 ]] || fail "stop: the job exited 0"
for r in 0 1 2; do
  grep -Eq "^rank $r: waiting [0-9.]+ s in [a-z_]+ #[0-9]+ on the [a-z ()]+ group.* \([0-9.]+ (bytes|KiB|MiB)\)" "$work/stop.log" ||
    fail "stop: rank $r did not say what it waits for: $(cat "$work/stop.log")"
done
grep -q "^hang summary (rank 0, after 3 s): who waits for whom" "$work/stop.log" || fail "stop: no summary: $(cat "$work/stop.log")"
grep -Eq "^  rank 3: no answer within [0-9]+ s \(dead, stopped, or busy outside communication\)" "$work/stop.log" ||
  fail "stop: the summary does not name the silent rank: $(cat "$work/stop.log")"
grep -Eq "^  rank [12] \(data [01], tensor 0, pipeline [01]\): waits [0-9.]+ s in " "$work/stop.log" ||
  fail "stop: the summary lacks the other ranks' lines: $(cat "$work/stop.log")"
grep -q "^  look first at rank 3$" "$work/stop.log" || fail "stop: no pointer at rank 3"
echo "PASS: SIGUSR1 reports and goes on; a stopped rank is named by rank 0's summary, the others say what they wait for"
