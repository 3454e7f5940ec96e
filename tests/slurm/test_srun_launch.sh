#!/usr/bin/env bash
# srun launches train exactly what mpiexec trains: losses at every step equal (to the last
# digit) for data 4 and data 2 x tensor 2 under `srun --mpi=pmix`, and for data 4 through an
# sbatch of scripts/slurm/train.sbatch (its GPU request granted by the cluster's stand-in GPUs).
# The start-of-run report names the launcher, Slurm's job and step and the local ranks; a rank
# that fails alone names its Slurm task; --mpi=pmi2 cannot start Debian's OpenMPI (the reason
# the script uses pmix).
source "$(dirname "$0")/lib.sh"
make_byte_data "$work/data"
common=(configs/debug/layouts.yaml --set train.steps=6 --set "data.train=$work/data/train_*.bin" --set checkpoint.dir=)

for layout in "4 1 1 0" "2 2 1 1"; do
  name=${layout// /_}
  args=("${common[@]}" $(layout_args $layout))
  "${MPIEXEC[@]}" -n 4 "$trainer" train "${args[@]}" --set "log.metrics=$work/mpi_$name.jsonl" > "$work/mpi_$name.log" 2>&1 ||
    fail "mpiexec $layout: $(cat "$work/mpi_$name.log")"
  srun -n 4 --mpi=pmix "$trainer" train "${args[@]}" --set "log.metrics=$work/srun_$name.jsonl" > "$work/srun_$name.log" 2>&1 ||
    fail "srun $layout: $(cat "$work/srun_$name.log")"
  [[ $(losses "$work/mpi_$name.jsonl" | wc -l) == 6 ]] || fail "mpiexec $layout: want 6 steps: $(cat "$work/mpi_$name.log")"
  diff <(losses "$work/mpi_$name.jsonl") <(losses "$work/srun_$name.jsonl") ||
    fail "srun $layout: losses differ from mpiexec: $(cat "$work/srun_$name.log")"
  grep -Eq "^launcher: srun, Slurm job [0-9]+\.0, 4 ranks; rank 0 is task 0, local rank 0 of 4 on its node \(SLURM_LOCALID 0\)$" \
    "$work/srun_$name.log" || fail "srun $layout: no launcher line: $(cat "$work/srun_$name.log")"
  grep -Eq "^launcher: mpiexec, 4 ranks; rank 0 is task 0, local rank 0 of 4 on its node \(OMPI_COMM_WORLD_LOCAL_RANK 0\)$" \
    "$work/mpi_$name.log" || fail "mpiexec $layout: no launcher line: $(cat "$work/mpi_$name.log")"
  echo "ok: data x tensor x pipeline $layout: srun's 6 losses equal mpiexec's"
done

# The example job script, submitted as a user would on one node of 4 tasks.
job=$(submit --wait --nodes=1 --ntasks-per-node=4 --cpus-per-task=1 --time=10 --output="$work/sbatch.out" \
  scripts/slurm/train.sbatch "${common[@]}" $(layout_args 4 1 1 0) --set "log.metrics=$work/sbatch.jsonl") ||
  fail "sbatch: $(cat "$work/sbatch.out" 2>/dev/null)"
[[ $(job_field "$job" JobState) == COMPLETED && $(job_field "$job" ExitCode) == 0:0 ]] ||
  fail "sbatch: job $job $(job_field "$job" JobState) $(job_field "$job" ExitCode): $(cat "$work/sbatch.out")"
diff <(losses "$work/mpi_4_1_1_0.jsonl") <(losses "$work/sbatch.jsonl") || fail "sbatch: losses differ from mpiexec"
grep -Eq "^launcher: srun, Slurm job $job\.0, 4 ranks; rank 0 is task 0, local rank 0 of 4 on its node \(SLURM_LOCALID 0\)$" \
  "$work/sbatch.out" || fail "sbatch: no launcher line: $(cat "$work/sbatch.out")"
echo "ok: sbatch scripts/slurm/train.sbatch (job $job): losses equal mpiexec's"

# One rank fails alone (its folder has no data): its message names its Slurm task.
mkdir -p "$work/empty"
rc=0
timeout 120 srun -n 2 --mpi=pmix bash -c 'cd "$1/$([[ $SLURM_PROCID == 1 ]] && echo empty || echo data)" && shift && exec "$@"' _ \
  "$work" "$trainer" train "$(realpath configs/debug/layouts.yaml)" --set "data.train=train_*.bin" --set checkpoint.dir= \
  --set log.metrics= --set train.steps=100000 $(layout_args 2 1 1 0) > "$work/alone.log" 2>&1 || rc=$?
[[ $rc != 0 && $rc != 124 ]] || fail "one rank fails alone: exit code $rc: $(cat "$work/alone.log")"
grep -Eq "^error \(rank 1 of 2, host [^,]+, pid [0-9]+, Slurm job [0-9]+\.0 task 1\): .*/layouts\.yaml: data\.train: no file matches the pattern 'train_\*\.bin'" \
  "$work/alone.log" || fail "one rank fails alone: its message does not name its Slurm task: $(cat "$work/alone.log")"
echo "ok: a rank that fails alone names its Slurm task (srun exit code $rc)"

# PMI-2: OpenMPI as Debian builds it has no PMI-2 support and stops in MPI_Init.
rc=0
timeout 120 srun -n 2 --mpi=pmi2 "$trainer" train "${common[@]}" $(layout_args 2 1 1 0) --set log.metrics= > "$work/pmi2.log" 2>&1 || rc=$?
if [[ $rc == 0 ]]; then
  echo "note: srun --mpi=pmi2 works with this OpenMPI too"
else
  grep -q "OMPI was not built with SLURM's PMI support" "$work/pmi2.log" || fail "pmi2: unexpected failure: $(cat "$work/pmi2.log")"
  echo "ok: srun --mpi=pmi2 cannot start this OpenMPI (exit code $rc); --mpi=pmix is needed"
fi
echo "PASS"
