#!/usr/bin/env bash
# test.sh: install, build and run the whole test suite; exits with ctest's code.
# Builds both configurations: build/ with the CUDA backend when nvcc is present (its cuda
# tests report skipped on a machine without a GPU) and build-nocuda/ with CUDA off, so both
# compile in CI. The tests run in build/.
set -euo pipefail
cd "$(dirname "$0")/.."
export TRAINER_WERROR=${TRAINER_WERROR:-1}
scripts/setup.sh
BUILD_DIR=build-nocuda TRAINER_CUDA=OFF scripts/setup.sh
scripts/fetch_data.sh
cd build
ctest --output-on-failure -j1 "$@"
