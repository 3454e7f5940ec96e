#!/usr/bin/env bash
# A rank that dies or hangs under srun does not leave the job hanging (as
# tests/e2e/test_dead_rank.sh under mpiexec):
# 1. kill -9 of task 1 (as the kernel's OOM killer would): Slurm's PMIx plugin sees the task
#    end and cancels the step at once, non-zero, naming task 1;
# 2. the same with srun --kill-on-bad-exit: srun sends task 0 SIGTERM, which it takes for a
#    preemption; its stop agreement waits for task 1 until the watchdog aborts the job after
#    parallel.timeout_s (the reason train.sbatch does not use it);
# 3. task 1 stopped (SIGSTOP, a hung rank): task 0's collective watchdog aborts the job after
#    parallel.timeout_s, naming its Slurm task; the step ends non-zero.
source "$(dirname "$0")/lib.sh"
make_byte_data "$work/data"
args=(configs/debug/layouts.yaml $(layout_args 2 1 1 0) --set train.steps=100000 --set "data.train=$work/data/train_*.bin"
      --set checkpoint.dir= --set log.every=1 --set "log.metrics=$work/m.jsonl" --set parallel.timeout_s=5)

# task_pid N: the pid of the trainer process that is Slurm task N of this test's job.
task_pid() {
  local p
  for p in $(pgrep -f "layouts.yaml.*$work"); do
    [[ -r /proc/$p/environ ]] && tr '\0' '\n' < /proc/$p/environ | grep -qx "SLURM_PROCID=$1" &&
      tr '\0' '\n' < /proc/$p/environ | grep -qx "SLURM_CONF=$SLURM_CONF" && { echo "$p"; return; }
  done
}

for scenario in kill kill-on-bad-exit stop; do
  rm -f "$work/m.jsonl"
  extra=()
  [[ $scenario == kill-on-bad-exit ]] && extra=(--kill-on-bad-exit=1)
  srun -n 2 --mpi=pmix "${extra[@]}" "$trainer" train "${args[@]}" > "$work/$scenario.log" 2>&1 &
  job=$!
  wait_step "$work/m.jsonl" 2 300
  victim=$(task_pid 1)
  [[ -n "$victim" ]] || fail "$scenario: task 1 not found"
  if [[ $scenario == stop ]]; then kill -STOP "$victim"; else kill -9 "$victim"; fi
  timeout 120 tail --pid=$job -f /dev/null || fail "$scenario: the job did not end within 120 s"
  rc=0
  wait $job || rc=$?
  [[ $rc -ne 0 ]] || fail "$scenario: srun exited 0: $(cat "$work/$scenario.log")"
  if [[ $scenario != kill ]]; then
    grep -Eq "^fatal \(rank 0, Slurm job [0-9]+\.[0-9]+ task 0\): .* did not complete within 5 s \(parallel.timeout_s\)" \
      "$work/$scenario.log" || fail "$scenario: no timeout message naming task 0: $(cat "$work/$scenario.log")"
  fi
  if [[ $scenario != stop ]]; then
    grep -Eq "task 1: Killed" "$work/$scenario.log" || fail "$scenario: Slurm does not name task 1: $(cat "$work/$scenario.log")"
  fi
  [[ -z "$(pgrep -f "layouts.yaml.*$work")" ]] || fail "$scenario: trainer processes left: $(pgrep -af "layouts.yaml.*$work")"
  echo "ok: $scenario: the step ended with srun exit code $rc"
  grep -E "^fatal|^srun|^slurmstepd" "$work/$scenario.log" | sed "s/^/  /"
done
echo "PASS"
