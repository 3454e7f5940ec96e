#!/usr/bin/env bash
# test.sh: install, build and run the whole test suite; exits with ctest's code.
# Builds both configurations: build/ with the CUDA backend when nvcc is present (its cuda
# tests report skipped on a machine without a GPU) and build-nocuda/ with CUDA off, so both
# compile in CI. The tests run in build/.
# --sanitize: instead, build build-asan/ (clang, ASan + UBSan, see setup.sh's TRAINER_ASAN)
# and run every test but the cuda ones there; a sanitizer report fails its test. Leak
# reports from OpenMPI's own allocations are suppressed by scripts/lsan.supp (see there).
# Left out there: the plan-against-peak-RSS tests (test_plan_rss), which compare the planner's
# prediction for the uninstrumented binary with a measured RSS that ASan inflates by its
# shadow memory, redzones and quarantine (20-25% here); and the trace's idle-gap check
# (test_trace), which compares a trace's gaps between compute spans with bench's message waits:
# ASan slows the host code between spans several times over (16.8 ms of gaps per step against
# 15.2 ms of waits here, 2.55 against 2.50 uninstrumented). Any other arguments go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${1:-}" == --sanitize ]]; then
  shift
  BUILD_DIR=build-asan TRAINER_ASAN=1 scripts/setup.sh
  scripts/fetch_data.sh --hf  # --hf: the tokenizer.json files and their JS reference
  # Full unwinding on malloc: OpenMPI's libraries lack frame pointers, and only a full stack
  # reaches the OpenMPI frame that scripts/lsan.supp matches.
  export ASAN_OPTIONS=detect_leaks=1:fast_unwind_on_malloc=0:print_suppressions=0
  export LSAN_OPTIONS="suppressions=$PWD/scripts/lsan.supp"
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  cd build-asan
  exec ctest --output-on-failure -j1 -LE cuda -E "bench's peak RSS|e2e: test_trace$" "$@"
fi
export TRAINER_WERROR=${TRAINER_WERROR:-1}
scripts/setup.sh
BUILD_DIR=build-nocuda TRAINER_CUDA=OFF scripts/setup.sh
scripts/fetch_data.sh --hf  # --hf: the tokenizer.json files and their JS reference
cd build
# Tests run in parallel, one per core (CTEST_PARALLEL_LEVEL overrides): they check numbers and
# behaviour, not time; the two whose checks need the machine to themselves are RUN_SERIAL
# (tests/CMakeLists.txt).
ctest --output-on-failure -j"${CTEST_PARALLEL_LEVEL:-$(nproc)}" "$@"
