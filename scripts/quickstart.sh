#!/usr/bin/env bash
# quickstart.sh: install what the trainer needs, build it, fetch and tokenize the default corpus
# (Moby Dick, byte-level), train configs/quickstart.yaml (a small character-level GPT-2 on the
# CPU, about 2 minutes on 2 cores) and plot its metrics. Target: at most 5 minutes end to end
# on a fresh 2-core Debian 12 machine. The build skips CUDA when no GPU answers (nvidia-smi) and
# builds the trainer alone; scripts/test.sh builds both configurations and the tests.
# Arguments go to `trainer train` (e.g. --set train.steps=1000).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
cuda=OFF
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then cuda=AUTO; fi
TRAINER_CUDA=${TRAINER_CUDA:-$cuda} SETUP_PACKAGES=quickstart BUILD_TARGETS=trainer scripts/setup.sh
built=$SECONDS
scripts/fetch_data.sh
if [[ ! -f datasets/mobydick_byte/val_000000.bin ]]; then
  build/trainer data prepare --input datasets/raw/mobydick.txt --tokenizer byte --out datasets/mobydick_byte --quiet
fi
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)}
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
trained_from=$SECONDS
build/trainer train configs/quickstart.yaml "$@"
trained=$SECONDS
/usr/bin/python3 scripts/plot_metrics.py runs/quickstart/metrics.jsonl --out runs/quickstart/metrics.png >/dev/null
echo "quickstart: install and build $((built - start)) s, training $((trained - trained_from)) s, all $((SECONDS - start)) s"
echo "quickstart: metrics plotted in runs/quickstart/metrics.png (scripts/plot_metrics.py runs/quickstart/metrics.jsonl)"
