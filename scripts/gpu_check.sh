#!/usr/bin/env bash
# One command on a bare GPU machine (CUDA toolkit, cmake, ninja, python3; no network; about 15
# minutes of device time in all) that builds the CUDA backend and returns a verdict and numbers
# within a global deadline (default 540 s, measured from the script's start, build included).
#
# Usage: scripts/gpu_check.sh [--deadline S] [--build DIR] [--bundle DIR] [--only a,b] [--dry-run]
#   --deadline S   seconds from the start for everything (default 540)
#   --build DIR    CUDA build tree (default $ROOT/build-gpu); scratch data under DIR/gpu_check_work
#   --bundle DIR   dependency bundle made by scripts/gpu_bundle.sh (default $ROOT/.gpu-bundle):
#                  DIR/env.sh, when present, is sourced first (PATH, LD_LIBRARY_PATH,
#                  CMAKE_PREFIX_PATH, OPAL_PREFIX ...); the summary says whether one was used
#   --only LIST    run only these steps (comma-separated names); the others are SKIP
#   --dry-run      print the plan (steps, budgets, commands) and exit 0; runs nothing, any machine
# Output: everything goes to ${OUT:-DIR/gpu_check} (the device tool sets OUT to a folder that
# comes back): log.txt (all output), summary.txt (rewritten before and after every step, so a
# killed run still says what it had), bench.jsonl (one line per bench step: its JSON with
# "check": 124m, 1p5b, cudnn or cudnn_1p5b), profiles.txt (their per-op tables of `trainer bench --profile`,
# one after another), kernel_resources.tsv (registers, shared, stack, local memory and spills
# per kernel), losses.tsv (the tiny runs' losses side by side): six files and summary.tmp at
# most, since the device tool returns at most 8. Scratch (data, metrics files, raw outputs,
# each bench's own files): DIR/gpu_check_work.
# Exit code: 0 every step passed or was skipped, 1 a step failed, 2 usage error, 77 no GPU
# (nvidia-smi missing or failing; --dry-run needs none).
#
# Steps (STEP_TABLE below: name, budget, description; --dry-run and the deadline use the same
# table), most informative first: prerequisites, nvidia-smi facts, build, ctest -L cuda, kernel
# resources (cuobjdump on the built objects plus the ptxas -v lines the build itself printed; no
# recompiling, seconds, no GPU), the tiny head-64 model fp32 on CPU and
# CUDA (losses to 1e-4), bf16 (finite, falling, within 2% of fp32), bf16 determinism (two runs
# bit-identical), bench gpt2-124m and gpt2-1.5b, gpt2-124m with cuDNN attention, data 2 / tensor 2 /
# data 2 ZeRO-1 (fp32 and bf16 wire) / pipeline 2 / interleaved, tensor 2 bf16 against one GPU
# (needs 2 GPUs), HF folders
# against transformers (scripts/gpu_check_hf.sh; SKIP where python3 has no transformers), then
# compute-sanitizer memcheck and racecheck (slow; time-boxed to their budgets, after the numbers
# so a slow sanitizer can never cost the benchmarks).
#
# Invariants:
#   - Before each step, if its budget no longer fits in the time left it is skipped with
#     "SKIP name: needs ~Xs, Ys left"; each step runs under `timeout` capped at
#     min(time left, max(2 x budget, budget + 30)) s, so one hung step cannot eat the rest.
#   - Every step runs in its own process (this script with --_step NAME) and prints one short
#     result; a failed step never stops the later ones (steps needing a missing binary SKIP).
#   - SKIP is not a failure: a sanitizer that is missing, refuses the device or hits its time
#     box with no error so far is SKIP with the reason; one GPU makes the multi-GPU step SKIP.
#   - SIGTERM/SIGINT: the running step is stopped, marked FAIL "interrupted", summary written.
# Test mode (tests/e2e/test_gpu_check_plan.sh), no GPU needed: GPU_CHECK_FAKE=1 fakes the
# nvidia-smi facts and replaces every step's body by `sleep GPU_CHECK_FAKE_SLEEP` (default 0.1);
# GPU_CHECK_FAKE_BUDGET=S (whole seconds) sets every budget, GPU_CHECK_FAKE_FAIL=a,b makes those steps fail,
# GPU_CHECK_FAKE_SLOW=a,b makes them sleep GPU_CHECK_FAKE_SLOW_S (default 600).
# GPU_CHECK_NVIDIA_SMI overrides the nvidia-smi command (the test points it nowhere), and
# GPU_CHECK_BUDGET_SCALE=K (a whole number) multiplies every budget: scripts/gpu_check_emulated.sh
# runs the trainer steps on the CPU emulator, many times slower than a GPU.
# shellcheck disable=SC2317  # step_NAME / plan_NAME are called by name
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SELF="$ROOT/scripts/gpu_check.sh"
COMPARE="$ROOT/scripts/gpu_check_compare.py"

# name  budget_s  description (budgets for a 16-core H200, one arch, ninja)
STEP_TABLE=(
  "prereqs      5  tools, headers and libraries are present (reported, never installed)"
  "gpu          5  nvidia-smi facts: name, memory, driver, clocks (current/max), compute capability"
  "build      200  configure (Release, CUDA on, this GPU's arch) and build trainer + test_cuda + test_parallel_cuda, all cores"
  "ctest       45  ctest -L cuda: every CUDA test case against the CPU"
  "resources   10  registers, shared/stack/local memory, spills per kernel (cuobjdump, the build's ptxas -v)"
  "data        10  byte-level train/val shards from generated text (no datasets on the machine)"
  "fp32        40  tiny head-64 model, 20 steps fp32 on CPU and on CUDA: every loss to 1e-4 relative"
  "bf16        25  the same on CUDA in bf16: finite, falling, step 20 within 2% of fp32"
  "determinism 35  the bf16 run again, and with train.graphs=step: bit-identical losses"
  "bench_124m  45  trainer bench gpt2-124m, micro-batch 32 x 1024 (tokens/s, MFU, memory, profile)"
  "bench_1p5b 100  trainer bench gpt2-1.5b, micro-batch 8 x 1024, 8 accumulated (global 64)"
  "bench_cudnn 35  bench_124m again with train.attention=cudnn (cuDNN fused attention against ours)"
  "bench_cudnn_1p5b 60  bench_1p5b again with train.attention=cudnn (the 1.5B goal may hinge on attention)"
  "bench_graphs 20  the quickstart model (0.85M, launch-bound) in bf16 with train.graphs off and step: tokens/s"
  "multi_gpu  140  data 2, tensor 2, data 2 ZeRO-1, pipeline 2, interleaved (fp32 to 1e-4), the bf16 wire (1e-3), tensor 2 bf16 (2%) against one GPU, tiny model (2+ GPUs)"
  "hf_logits   40  tiny llama and gpt2 exported as HF folders, loaded by transformers: logits to 1e-4 (SKIP without it)"
  "memcheck    90  test_cuda (the kernels; not NCCL) under compute-sanitizer memcheck, time-boxed"
  "racecheck   60  attention and reduction cases under compute-sanitizer racecheck, time-boxed"
)
RACECHECK_CASES='*attention*,*sum_squares*,*bias_backward*,*layernorm*,*rmsnorm*,*cross-entropy*'
TINY_RTOL=1e-4
BF16_RTOL=0.02
WIRE_RTOL=1e-3

# shellcheck source=scripts/gpu_check_steps.sh
source "$ROOT/scripts/gpu_check_steps.sh"
# shellcheck source=scripts/gpu_check_hf.sh
source "$ROOT/scripts/gpu_check_hf.sh"

# ---------------------------------------------------------------- driver

usage() {
  sed -n '/^# Usage:/,/^# Output:/p' "$SELF" | sed '$d; s/^# \{0,1\}//'
}
abspath() { case "$1" in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
finish() {  # finish RC: let the log's tee drain (at most 3 s), then exit
  exec 1>&- 2>&-
  local i
  for ((i = 0; i < 30; i++)); do kill -0 "$TEE_PID" 2>/dev/null || break; sleep 0.1; done
  exit "$1"
}
usage_error() {
  echo "gpu_check.sh: $1" >&2
  usage >&2
  exit 2
}

step_budget() {  # step_budget ENTRY: the budget (x GPU_CHECK_BUDGET_SCALE), GPU_CHECK_FAKE_BUDGET in fake mode
  if [ "$FAKE" = 1 ] && [ -n "${GPU_CHECK_FAKE_BUDGET:-}" ]; then echo "$GPU_CHECK_FAKE_BUDGET"
  else awk -v k="${GPU_CHECK_BUDGET_SCALE:-1}" '{print $2 * k}' <<<"$1"; fi
}

write_summary() {  # write_summary [RUNNING_LINE]: summary.txt, atomically
  local tmp="$OUT/summary.tmp" pass=0 fail=0 skip=0 line failed=()
  for line in "${SUMMARY[@]}"; do
    case "$line" in
      PASS*) pass=$((pass + 1)) ;;
      FAIL*) fail=$((fail + 1)); failed+=("$(awk '{print $2}' <<<"$line")") ;;
      SKIP*) skip=$((skip + 1)) ;;
    esac
  done
  {
    echo "gpu_check $(date -u '+%Y-%m-%d %H:%M:%S') UTC: $((($(now_ms) - START_MS) / 1000)) s of the ${DEADLINE} s deadline${STATE:+; $STATE}"
    echo "gpu: $GPU_FACTS"
    echo "bundle: $BUNDLE_NOTE"
    echo "build: $BUILD"
    printf '%s\n' "${SUMMARY[@]}"
    [ -n "${1:-}" ] && echo "$1"
    if [ -n "${1:-}" ] || [ -n "$STATE" ]; then
      echo "verdict: incomplete${STATE:+ ($STATE)}: $pass passed, $fail failed${failed[*]:+ (${failed[*]})}, $skip skipped so far"
    elif [ $fail -gt 0 ]; then
      echo "verdict: FAIL: $fail failed (${failed[*]}), $pass passed, $skip skipped"
    else
      echo "verdict: PASS: $pass passed, $skip skipped"
    fi
  } >"$tmp" && mv -f "$tmp" "$OUT/summary.txt"
}
add_line() {  # add_line STATUS NAME SECONDS TEXT
  SUMMARY+=("$(printf '%-4s  %-11s %4ss  %s' "$1" "$2" "$3" "$4")")
}

on_signal() {  # on_signal NAME NUMBER: stop the running step, record it, write the summary
  trap '' TERM INT HUP
  if [ -n "$CHILD" ]; then
    kill -TERM "$CHILD" 2>/dev/null
    wait "$CHILD" 2>/dev/null
  fi
  if [ -n "$CURRENT" ]; then
    add_line FAIL "$CURRENT" $((($(now_ms) - STEP_T0) / 1000)) "interrupted by SIG$1"
  fi
  STATE="interrupted by SIG$1; not run: ${REMAINING:-none}"
  write_summary
  echo "gpu_check: interrupted by SIG$1; summary in $OUT/summary.txt"
  finish $((128 + $2))
}

detect_gpu() {  # sets NGPU, ARCH, GPU_FACTS; exits 77 without a GPU
  if [ "$FAKE" = 1 ]; then
    NGPU="${GPU_CHECK_FAKE_GPUS:-1}" ARCH=90 GPU_FACTS="FAKE GPU (GPU_CHECK_FAKE=1), $NGPU GPU(s)"
    return
  fi
  if ! command -v "$NVSMI" >/dev/null 2>&1; then
    echo "gpu_check: no GPU: nvidia-smi ($NVSMI) not found (no NVIDIA driver); nothing to check here (exit 77)" >&2
    exit 77
  fi
  local list
  if ! list=$("$NVSMI" -L 2>&1); then
    echo "gpu_check: no GPU: nvidia-smi failed: $(head -c 300 <<<"$list"); nothing to check here (exit 77)" >&2
    exit 77
  fi
  NGPU=$(grep -c '^GPU [0-9]' <<<"$list")
  if [ "$NGPU" = 0 ]; then
    echo "gpu_check: no GPU: nvidia-smi -L lists none; nothing to check here (exit 77)" >&2
    exit 77
  fi
  ARCH=$("$NVSMI" --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
  [[ "$ARCH" =~ ^[0-9]+$ ]] || ARCH=90
  GPU_FACTS="$("$NVSMI" --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -1), sm_$ARCH, $NGPU GPU(s)"
}

print_plan() {
  local entry name budget desc total=0 n=0
  echo "gpu_check plan (dry run: nothing is run)"
  echo "  deadline ${DEADLINE} s from the start; a step whose budget no longer fits is skipped; each step runs"
  echo "  under timeout min(time left, max(2 x budget, budget + 30)) s; output in $OUT"
  echo "  build dir $BUILD; scratch $WORK"
  if [ -f "$BUNDLE/env.sh" ]; then echo "  bundle: $BUNDLE/env.sh would be sourced first"
  else echo "  bundle: none ($BUNDLE/env.sh not found)"; fi
  echo "  CUDA arch: the GPU's compute_cap from nvidia-smi (90 below, and when unknown); exit 77 when no GPU answers"
  echo
  for entry in "${STEP_TABLE[@]}"; do
    read -r name _ desc <<<"$entry"
    budget=$(step_budget "$entry")
    n=$((n + 1))
    total=$((total + budget))
    printf '%2d. %-11s %4s s  %s\n' "$n" "$name" "$budget" "$desc"
    "plan_$name"
  done
  echo
  echo "budgets total $total s against the $DEADLINE s deadline: when earlier steps use their whole"
  echo "budget the last ones are skipped (one GPU: multi_gpu skips at once)."
}

main() {
  DRY_RUN=0 DEADLINE=540 BUILD="$ROOT/build-gpu" BUNDLE="$ROOT/.gpu-bundle" ONLY=""
  while [ $# -gt 0 ]; do
    case "$1" in
      --dry-run) DRY_RUN=1 ;;
      --deadline|--build|--bundle|--only)
        [ $# -ge 2 ] || usage_error "$1 needs a value"
        case "$1" in
          --deadline) DEADLINE="$2" ;;
          --build) BUILD="$2" ;;
          --bundle) BUNDLE="$2" ;;
          --only) ONLY="$2" ;;
        esac
        shift ;;
      -h|--help) usage; exit 0 ;;
      *) usage_error "unknown argument '$1'" ;;
    esac
    shift
  done
  if ! [[ "$DEADLINE" =~ ^[0-9]+$ ]] || [ "$DEADLINE" -eq 0 ]; then
    usage_error "--deadline $DEADLINE: a whole number of seconds > 0"
  fi
  if ! [[ "${GPU_CHECK_BUDGET_SCALE:-1}" =~ ^[1-9][0-9]*$ ]]; then
    usage_error "GPU_CHECK_BUDGET_SCALE=$GPU_CHECK_BUDGET_SCALE: a whole number > 0"
  fi
  local entry name known=","
  for entry in "${STEP_TABLE[@]}"; do known+="$(awk '{print $1}' <<<"$entry"),"; done
  if [ -n "$ONLY" ]; then
    local IFS=,
    for name in $ONLY; do in_list "$name" "$known" || usage_error "--only: unknown step '$name'; steps: ${known:1:-1}"; done
    unset IFS
  fi
  START_MS=$(now_ms)
  BUILD="$(abspath "$BUILD")"
  BUNDLE="$(abspath "$BUNDLE")"
  OUT="$(abspath "${OUT:-$BUILD/gpu_check}")"
  WORK="$BUILD/gpu_check_work"
  TRAINER="$BUILD/trainer"
  FAKE="${GPU_CHECK_FAKE:-0}"
  NVSMI="${GPU_CHECK_NVIDIA_SMI:-nvidia-smi}"
  NVCC="${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
  CUDA_BIN="$(dirname "$NVCC")"
  ARCH=90 NGPU=1
  if [ "$DRY_RUN" = 1 ]; then
    print_plan
    exit 0
  fi

  BUNDLE_NOTE="none ($BUNDLE/env.sh not found)"
  # The machine's own library path, before the bundle's: python3 with torch and transformers
  # runs with it (sys_python3), so that the bundle's Debian libraries never shadow the ones its
  # wheels were built against. Kept from the first process (steps run as child processes);
  # where env.sh was sourced before this script, the path it found then.
  : "${GPU_CHECK_SYSTEM_LD_LIBRARY_PATH=${TRAINER_BUNDLE_ORIG_LD_LIBRARY_PATH-${LD_LIBRARY_PATH:-}}}"
  export GPU_CHECK_SYSTEM_LD_LIBRARY_PATH
  if [ -f "$BUNDLE/env.sh" ]; then
    set +u
    # shellcheck disable=SC1091
    source "$BUNDLE/env.sh" || { echo "gpu_check: sourcing $BUNDLE/env.sh failed" >&2; exit 1; }
    set -u
    BUNDLE_NOTE="used $BUNDLE (env.sh sourced)"
  fi
  case ":$PATH:" in *":$CUDA_BIN:"*) ;; *) [ -d "$CUDA_BIN" ] && PATH="$PATH:$CUDA_BIN" ;; esac
  detect_gpu
  cd "$ROOT" || exit 1
  mkdir -p "$BUILD" "$OUT" "$WORK" || { echo "gpu_check: cannot create $BUILD, $OUT or $WORK" >&2; exit 1; }
  # bench.jsonl and profiles.txt gather the benches of this run only.
  rm -f "$WORK"/bench_*.json "$WORK"/profile_*.txt "$OUT/bench.jsonl" "$OUT/profiles.txt"
  exec > >(tee "$OUT/log.txt") 2>&1
  TEE_PID=$!
  export ROOT OUT WORK BUILD TRAINER ARCH NGPU NVSMI NVCC CUDA_BIN FAKE DRY_RUN PATH

  SUMMARY=() STATE="" CHILD="" CURRENT="" REMAINING=""
  trap 'on_signal TERM 15' TERM
  trap 'on_signal INT 2' INT
  trap 'on_signal HUP 1' HUP
  echo "gpu_check: deadline ${DEADLINE} s; GPU: $GPU_FACTS; bundle: $BUNDLE_NOTE; out: $OUT"
  local i budget desc left_ms left cap rc took text n=${#STEP_TABLE[@]}
  for ((i = 0; i < n; i++)); do
    entry="${STEP_TABLE[$i]}"
    read -r name _ desc <<<"$entry"
    budget=$(step_budget "$entry")
    REMAINING=$(for e in "${STEP_TABLE[@]:i+1}"; do awk '{print $1}' <<<"$e"; done | paste -sd, -)
    if [ -n "$ONLY" ] && ! in_list "$name" "$ONLY"; then
      add_line SKIP "$name" 0 "not selected (--only $ONLY)"
      continue
    fi
    left_ms=$((DEADLINE * 1000 - ($(now_ms) - START_MS)))
    left=$((left_ms > 0 ? left_ms / 1000 : 0))
    if [ $((budget * 1000)) -gt "$left_ms" ]; then
      echo
      echo "SKIP $name: needs ~${budget}s, ${left}s left"
      add_line SKIP "$name" 0 "needs ~${budget}s, ${left}s left"
      write_summary
      continue
    fi
    cap=$((2 * budget > budget + 30 ? 2 * budget : budget + 30))
    cap=$((cap < left ? cap : left))
    cap=$((cap > 0 ? cap : 1))
    echo
    echo "=== [$((i + 1))/$n] $name: $desc (budget ${budget}s, timeout ${cap}s, $(((DEADLINE * 1000 - left_ms) / 1000))s elapsed) ==="
    CURRENT="$name" STEP_T0=$(now_ms)
    write_summary "RUN   $name (started at $(((STEP_T0 - START_MS) / 1000)) s, budget ${budget}s)"
    export STEP_RESULT="$WORK/step_result.txt" STEP_BUDGET="$budget" STEP_CAP="$cap"
    : >"$STEP_RESULT"
    timeout --kill-after=3 "$cap" "$BASH" "$SELF" --_step "$name" &
    CHILD=$!
    wait "$CHILD"
    rc=$?
    CHILD="" CURRENT=""
    took=$((($(now_ms) - STEP_T0) / 1000))
    text=$(head -n 1 "$STEP_RESULT" 2>/dev/null)
    case "$rc" in
      0) add_line PASS "$name" "$took" "$text" ;;
      77) add_line SKIP "$name" "$took" "$text" ;;
      124|137) add_line FAIL "$name" "$took" "timed out after ${cap}s${text:+; $text}" ;;
      *) add_line FAIL "$name" "$took" "${text:-exit code $rc; see log.txt}" ;;
    esac
    echo "--- ${SUMMARY[-1]}"
    write_summary
  done
  REMAINING=""
  write_summary
  echo
  echo "=== summary ($OUT/summary.txt) ==="
  cat "$OUT/summary.txt"
  grep -q '^FAIL' "$OUT/summary.txt" && finish 1
  finish 0
}

if [ "${1:-}" = --_step ]; then  # one step in its own process (started by main under timeout)
  cd "$ROOT" || exit 1
  if [ "$FAKE" = 1 ]; then fake_step "$2"; else "step_$2"; fi
  exit $?
fi
main "$@"
