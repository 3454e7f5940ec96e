#!/usr/bin/env bash
# Preemption and requeue of a job of scripts/slurm/train.sbatch (data 2 x tensor 2, ZeRO-1),
# one job through three interruptions:
# 1. `scancel --signal=TERM` (the ranks themselves): they finish the step, checkpoint, exit 0,
#    and the job completes with exit code 0:0;
# 2. `scontrol requeue` restarts it: it resumes from that checkpoint; its time limit, cut to
#    2 minutes while it trains, brings the script's --signal=B:TERM@120 at once: the batch
#    shell passes it to the ranks, they checkpoint and exit 0, and the script requeues the job
#    itself;
# 3. the job restarts and resumes again; `scancel --signal=TERM` ends it as in 1.
# Losses at every step (one metrics file over the three runs) and every rank's state at the
# end equal those of an uninterrupted srun run stopped at the same step.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/../e2e/ckpt_lib.sh"
args=(configs/debug/layouts.yaml $(layout_args 2 2 1 1) --set train.steps=100000 --set checkpoint.every=0
      --set "data.train=$work/data/train_*.bin" --set log.every=1)
out="$work/job.out"

# stopped_at N: the step of the Nth "stopping after step S on signal 15" line of the job's log.
stopped_at() {
  sed -nE 's/^stopping after step ([0-9]+) on signal 15 \(checkpoint saved\); resume with the same command$/\1/p' "$out" |
    sed -n "$1p"
}
# wait_stopped N: waits up to 120 s for the Nth stop.
wait_stopped() {
  for _ in $(seq 1200); do [[ -n "$(stopped_at "$1")" ]] && return 0; sleep 0.1; done
  fail "no stop number $1 within 120 s: $(cat "$out")"
}
# expect_resumed N STEP: the job's log says N times that it resumed, the last time from STEP.
expect_resumed() {
  local resumes
  resumes=$(grep -c "^checkpoint: resuming from $work/ck/step_$(printf %08d "$2") " "$out" || true)
  [[ $(grep -c "^checkpoint: resuming from " "$out") == "$1" && $resumes -ge 1 ]] || fail "want resume $1 from step $2: $(cat "$out")"
}

job=$(submit --nodes=1 --ntasks-per-node=4 --cpus-per-task=1 --time=10 --output="$out" scripts/slurm/train.sbatch \
  "${args[@]}" --set "checkpoint.dir=$work/ck" --set "log.metrics=$work/job.jsonl")

# 1. scancel --signal=TERM at a random step.
wait_step "$work/job.jsonl" $((5 + RANDOM % 20)) 300
scancel --signal=TERM "$job"
wait_job_state "$job" 120 COMPLETED
[[ $(job_field "$job" ExitCode) == 0:0 ]] || fail "scancel --signal=TERM: exit code $(job_field "$job" ExitCode): $(cat "$out")"
s1=$(stopped_at 1)
[[ -n "$s1" ]] || fail "scancel --signal=TERM: no stopping message: $(cat "$out")"
[[ "$(complete_steps "$work/ck")" == "step_$(printf %08d "$s1")" ]] || fail "checkpoints after scancel: $(ls "$work/ck")"
echo "ok: scancel --signal=TERM: checkpoint at step $s1, job $job completed with exit code 0:0"

# 2. scontrol requeue; once the restarted job trains again, a 2-minute limit (its warning,
#    120 s before the end, is due at once: slurmctld sends it at its next time-limit check).
scontrol requeue "$job"
wait_job_state "$job" 120 RUNNING
wait_step "$work/job.jsonl" $((s1 + 2)) 300
scontrol update JobId="$job" TimeLimit=2
wait_stopped 2
s2=$(stopped_at 2)
for _ in $(seq 300); do [[ $(job_field "$job" Restarts) == 2 ]] && break; sleep 0.1; done
[[ $(job_field "$job" Restarts) == 2 ]] || fail "the job was not requeued by its script: $(scontrol -o show job "$job")"
scontrol update JobId="$job" TimeLimit=10
grep -q "^job $job: stopped on a signal with a checkpoint; requeueing$" "$out" || fail "the script did not requeue: $(cat "$out")"
expect_resumed 1 "$s1"
(( s2 > s1 )) || fail "time limit: stopped at step $s2, not after the resumed step $s1"
[[ "$(complete_steps "$work/ck" | tail -1)" == "step_$(printf %08d "$s2")" ]] || fail "checkpoints after the time limit: $(ls "$work/ck")"
echo "ok: time limit (--signal=B:TERM@120): checkpoint at step $s2, the job requeued itself"

# 3. The restarted job resumes; stop it as in 1.
wait_job_state "$job" 120 RUNNING
wait_step "$work/job.jsonl" $((s2 + 3)) 300
scancel --signal=TERM "$job"
wait_job_state "$job" 120 COMPLETED
[[ $(job_field "$job" ExitCode) == 0:0 ]] || fail "third run: exit code $(job_field "$job" ExitCode): $(cat "$out")"
s3=$(stopped_at 3)
expect_resumed 2 "$s2"
[[ -n "$s3" ]] && (( s3 > s2 )) || fail "third run: stopped at '$s3': $(cat "$out")"

# The uninterrupted reference (a constant learning rate: train.steps does not change the curve).
srun -n 4 --mpi=pmix "$trainer" train "${args[@]}" --set "checkpoint.dir=$work/ref" --set "log.metrics=$work/ref.jsonl" \
  --stop-at "$s3" > "$work/ref.log" 2>&1 || fail "reference run: $(cat "$work/ref.log")"
[[ $(losses "$work/ref.jsonl" | wc -l) == "$s3" ]] || fail "reference: want $s3 steps: $(cat "$work/ref.log")"
diff <(losses "$work/ref.jsonl") <(losses "$work/job.jsonl") > "$work/diff.txt" ||
  fail "losses of the interrupted job differ from the uninterrupted run: $(head -20 "$work/diff.txt")"
final="step_$(printf %08d "$s3")"
n=0
for f in "$work/ref/$final"/rank_*.bin; do
  cmp "$f" "$work/ck/$final/$(basename "$f")" || fail "final state differs in $(basename "$f")"
  n=$((n + 1))
done
(( n == 4 )) || fail "want 4 rank files in $work/ref/$final, found $n"
echo "PASS: stopped at steps $s1 (scancel), $s2 (time limit), $s3 (scancel); $s3 losses and $n rank files equal an uninterrupted run"
