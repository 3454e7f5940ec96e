# Shared helpers for the Slurm tests (sourced; after ../e2e/lib.sh's scratch folder and data
# helpers): a one-node cluster of this test's own (cluster.sh), stopped on every exit, and
# ways to wait on its jobs. Exit 77 (skipped) only when the cluster cannot run here (Slurm or
# munge not installed, not root); a cluster that is installed but does not start fails.
source "$(dirname "$0")/../e2e/lib.sh"
cluster_sh="$(cd "$(dirname "$0")" && pwd)/cluster.sh"
# Not under $work: munged wants every folder above its socket searchable by all.
cluster=$(mktemp -d)
trap 'bash "$cluster_sh" stop "$cluster"; rm -rf "$work" "$cluster"' EXIT
# A test ended by a signal (ctest's timeout, Ctrl-C) still stops its cluster.
trap 'exit 143' TERM
trap 'exit 130' INT
export SLURM_CONF="$cluster/slurm.conf"
cluster_rc=0
bash "$cluster_sh" start "$cluster" || cluster_rc=$?
if [[ $cluster_rc == 77 ]]; then echo "SKIP: no Slurm cluster can run on this machine (see above)"; exit 77; fi
[[ $cluster_rc == 0 ]] || fail "the Slurm cluster did not start (exit code $cluster_rc)"
trainer=$(realpath "$trainer")
# The binary train.sbatch runs (sbatch passes the environment on to the job).
export TRAINER="$trainer"
# Every task: one thread, yielding when idle (more ranks than cores), as MPIEXEC passes them.
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive OPENBLAS_NUM_THREADS=1

# job_field ID FIELD: one field of `scontrol show job` (JobState, ExitCode, Restarts...).
job_field() { scontrol -o show job "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

# wait_job_state ID SECONDS STATE...: waits until job ID is in one of the states; fails after
# SECONDS naming the state it is in.
wait_job_state() {
  local id="$1" seconds="$2" state
  shift 2
  for _ in $(seq $((seconds * 10))); do
    state=$(job_field "$id" JobState)
    for want in "$@"; do [[ $state == "$want" ]] && return 0; done
    sleep 0.1
  done
  fail "job $id: state $state after $seconds s, want $*: $(scontrol -o show job "$id")"
}

# wait_step METRICS STEP SECONDS: waits until the metrics file has logged STEP.
wait_step() {
  local last
  for _ in $(seq $(($3 * 100))); do
    last=$( (losses "$1" 2>/dev/null || true) | tail -1 | cut -d' ' -f1)
    [[ ${last:-0} -ge $2 ]] && return 0
    sleep 0.01
  done
  fail "$1: step $2 not reached within $3 s (last ${last:-none})"
}

# submit ARGS...: sbatch ARGS, the job id on stdout.
submit() { sbatch --parsable "$@" | cut -d';' -f1; }
