#!/usr/bin/env bash
# bench_bubbles.sh [PIPELINE] [MICRO_BATCHES...]: the measured pipeline bubble of each schedule
# against the schedule model's prediction. For PIPELINE stages (default 4) and each micro-batch
# count (default 4 8), `trainer bench` runs the debug layout model widened to 8 layers under
# gpipe, 1f1b, zero_bubble and interleaved over 2 virtual stages, one rank per stage, and prints one table
# row per run: step time, the mean over ranks of the time spent waiting on stage-to-stage
# messages as a share of the step, and the schedule model's idle share ((p-1)/(v*m+p-1), or
# zero_bubble's unit-time pass).
#
# On a machine with fewer cores than stages the ranks share cores (OMP_NUM_THREADS=1 each,
# passive waits), so a rank's wait also holds the time its neighbours computed on its core:
# compare the schedules with each other, not the absolute shares with the model.
#
# Environment: TRAINER (default build/trainer), BENCH_STEPS (timed steps, default 6).
set -euo pipefail
cd "$(dirname "$0")/.."
trainer="${TRAINER:-build/trainer}"
p="${1:-4}"
shift || true
micros=("$@")
[[ ${#micros[@]} -gt 0 ]] || micros=(4 8)
steps="${BENCH_STEPS:-6}"
[[ -x "$trainer" ]] || { echo "bench_bubbles.sh: no trainer at $trainer (set TRAINER)" >&2; exit 2; }
launcher=(mpiexec --oversubscribe -x OMP_NUM_THREADS=1 -x OMP_WAIT_POLICY=passive -x OPENBLAS_NUM_THREADS=1)
[[ $(id -u) -eq 0 ]] && launcher=(mpiexec --allow-run-as-root "${launcher[@]:1}")
model=(--set model.n_layer=8 --set model.d_model=128 --set model.seq_len=64 --set train.seq_len=64
       --set train.micro_batch=4 --set parallel.pipeline="$p")

printf '%-12s %3s %10s %14s %14s\n' schedule m "step s" "measured wait" "model bubble"
for m in "${micros[@]}"; do
  for sched in gpipe 1f1b zero_bubble interleaved; do
    sets=("${model[@]}" --set train.global_batch=$((4 * m)) --set parallel.schedule=$sched)
    label=$sched
    if [[ $sched == interleaved ]]; then
      sets+=(--set parallel.virtual_stages=2)
      label="interleaved2"
    fi
    json=$("${launcher[@]}" -n "$p" "$trainer" bench configs/debug/layouts.yaml "${sets[@]}" --steps "$steps" \
      --warmup 2 --json 2>/dev/null | grep -E '^\{' | tail -1) || { printf '%-12s %3s failed\n' "$label" "$m"; continue; }
    python3 -c '
import json, sys
d = json.loads(sys.argv[1])
step, wait, model = d["step_s"], 100 * d["bubble_fraction"], 100 * d["bubble_fraction_model"]
print(f"{sys.argv[2]:<12} {sys.argv[3]:>3} {step:>10.4f} {wait:>13.1f}% {model:>13.1f}%")' "$json" "$label" "$m"
  done
done
