#!/usr/bin/env bash
# One-command check on a GPU machine (no network needed), in well under 8 minutes:
#   1. configure + build Release with CUDA into build-gpu (all cores, this GPU's arch only),
#   2. run the CUDA tests (ctest -L cuda),
#   3. train the tiny debug model for 50 steps on the GPU (on byte-level data made here: the
#      GPU machine has no datasets and no network),
#   4. benchmark gpt2-124m (micro-batch 32 x 1024) for 20 steps and gpt2-1.5b (micro-batch
#      8 x 1024) for 10 steps on one GPU (tokens/s, MFU, step-time split, peak memory),
#   5. print registers / shared memory / spills of every kernel (ptxas -v).
# Every step runs even if an earlier one failed; a summary and a non-zero exit code report
# failures. Output is also written to build-gpu/gpu_check.log.
# Usage: scripts/gpu_check.sh [build-dir]   (run from anywhere; default build-gpu)
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${1:-$ROOT/build-gpu}"
cd "$ROOT" || exit 1
mkdir -p "$BUILD"
LOG="$BUILD/gpu_check.log"
exec > >(tee "$LOG") 2>&1
START=$(date +%s)
declare -a SUMMARY=()
FAILED=0

step() {  # step NAME TIMEOUT_S COMMAND...
  local name="$1" limit="$2"
  shift 2
  echo
  echo "=== $name ($(($(date +%s) - START)) s elapsed) ==="
  echo "+ $*"
  local t0=$(date +%s)
  timeout --kill-after=10 "$limit" "$@"
  local rc=$?
  local took=$(($(date +%s) - t0))
  if [ $rc -eq 0 ]; then
    SUMMARY+=("PASS  $name (${took}s)")
  else
    [ $rc -eq 124 ] && echo "!!! $name: timed out after ${limit}s"
    SUMMARY+=("FAIL  $name (rc=$rc, ${took}s)")
    FAILED=1
  fi
  return $rc
}

# ---- prerequisites (the GPU machine has no network: report, never install) ----
echo "=== prerequisites ==="
missing=()
NVCC="${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
[ -x "$NVCC" ] || missing+=("nvcc (CUDA toolkit; expected on PATH or /usr/local/cuda/bin)")
command -v cmake >/dev/null || missing+=("cmake >= 3.25")
command -v c++ >/dev/null || missing+=("a C++17 compiler (c++)")
command -v mpicc >/dev/null || missing+=("MPI development files (mpicc; Debian: libopenmpi-dev)")
command -v mpiexec >/dev/null || missing+=("mpiexec (OpenMPI)")
command -v nvidia-smi >/dev/null || missing+=("nvidia-smi (NVIDIA driver)")
for header in yaml-cpp/yaml.h CLI/CLI.hpp fmt/core.h doctest/doctest.h xxhash.h; do
  found=0
  for dir in /usr/include /usr/local/include /usr/include/x86_64-linux-gnu; do
    [ -e "$dir/$header" ] && found=1
  done
  [ $found -eq 1 ] || missing+=("$header (Debian: libyaml-cpp-dev / libcli11-dev / libfmt-dev / doctest-dev / libxxhash-dev)")
done
ls /usr/include/x86_64-linux-gnu/openblas-openmp/cblas.h >/dev/null 2>&1 ||
  missing+=("OpenBLAS OpenMP build (libopenblas-openmp-dev)")
for lib in cudnn nccl cublasLt; do
  found=0
  for dir in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/lib/x86_64-linux-gnu; do
    compgen -G "$dir/lib$lib.so*" >/dev/null && found=1
  done
  ldconfig -p 2>/dev/null | grep -q "lib$lib\.so" && found=1
  [ $found -eq 1 ] || missing+=("lib$lib (CUDA libraries)")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "MISSING on this machine (install them; this machine has no network):"
  printf '  - %s\n' "${missing[@]}"
  SUMMARY+=("FAIL  prerequisites: ${#missing[@]} missing")
  FAILED=1
else
  echo "all found"
fi

if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv
  ARCH=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')
fi
ARCH="${ARCH:-90}"
echo "building for sm_$ARCH; $(nproc) cores"

# ---- 1. build ----
step "configure" 120 cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DTRAINER_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES="$ARCH" -DTRAINER_WERROR=OFF
step "build trainer and test_cuda" 330 cmake --build "$BUILD" -j "$(nproc)" --target trainer test_cuda

# ---- 2. CUDA tests ----
step "ctest -L cuda" 180 ctest --test-dir "$BUILD" -L cuda --output-on-failure --timeout 120

# ---- 3. tiny training run ----
DATA="$BUILD/gpu_check_data"
mkdir -p "$DATA"
awk 'BEGIN { srand(7); split("the a whale sea ship captain white long of and to in was he it that his", w, " ");
       for (d = 0; d < 40; d++) { for (l = 0; l < 60; l++) { line = "";
         for (k = 0; k < 12; k++) line = line w[int(rand() * 17) + 1] " "; print line } print "\n\n\n" } }' \
  > "$DATA/text.txt"
step "prepare byte-level data" 60 "$BUILD/trainer" data prepare --input "$DATA/text.txt" --tokenizer byte \
  --out "$DATA" --val-fraction 0.1 --quiet
step "train tiny, 50 steps" 120 "$BUILD/trainer" train configs/debug/tiny.yaml \
  --set train.device=cuda --set train.steps=50 --set "data.train=$DATA/train_*.bin" --set "data.val=$DATA/val_*.bin" \
  --set eval.every=25 --set log.every=10

# ---- 4. benchmarks (one GPU: data 1; one micro-batch per step) ----
step "bench gpt2-124m, 20 steps" 180 "$BUILD/trainer" bench configs/gpt2-124m.yaml \
  --set train.device=cuda --set parallel.data=1 --set train.micro_batch=32 --set train.global_batch=32 \
  --steps 20 --warmup 3
step "bench gpt2-1.5b, 10 steps" 240 "$BUILD/trainer" bench configs/gpt2-1.5b.yaml \
  --set train.device=cuda --set parallel.data=1 --set train.micro_batch=8 --set train.global_batch=8 \
  --steps 10 --warmup 2

# ---- 5. registers, shared memory and spills per kernel ----
echo
echo "=== ptxas -v for sm_$ARCH (registers, shared memory, spills) ==="
PTX_DIR="$BUILD/ptxas"
mkdir -p "$PTX_DIR"
pids=()
for f in "$ROOT"/kernels/cuda/*.cu; do
  timeout 240 "$NVCC" -I"$ROOT" -O3 -DNDEBUG -std=c++17 --expt-relaxed-constexpr \
    -gencode "arch=compute_$ARCH,code=sm_$ARCH" -Xptxas -v -c "$f" -o /dev/null \
    > "$PTX_DIR/$(basename "$f" .cu).log" 2>&1 &
  pids+=($!)
done
# Wait for these jobs only: a bare `wait` would also wait for the tee above (bash >= 5.1).
for pid in "${pids[@]}"; do wait "$pid"; done
spills=0
for log in "$PTX_DIR"/*.log; do
  awk '
    /Compiling entry function/ { match($0, /\047[^\047]+\047/); fn = substr($0, RSTART + 1, RLENGTH - 2) }
    /spill stores/ { match($0, /[0-9]+ bytes spill stores/); st = substr($0, RSTART, RLENGTH) + 0
                     match($0, /[0-9]+ bytes spill loads/); ld = substr($0, RSTART, RLENGTH) + 0 }
    /Used [0-9]+ registers/ { match($0, /Used [0-9]+ registers/); regs = substr($0, RSTART + 5, RLENGTH - 15) + 0
                              smem = 0; if (match($0, /[0-9]+ bytes smem/)) smem = substr($0, RSTART, RLENGTH) + 0
                              printf "%s\t%d\t%d\t%d\t%d\n", fn, regs, smem, st, ld }
  ' "$log"
done | c++filt | sed -E 's/trainer::cuda::\(anonymous namespace\):://' | sort -u > "$PTX_DIR/summary.tsv"
printf '%-5s %-7s %-7s %-6s %s\n' regs smem_B spill_st spill_ld kernel
while IFS=$'\t' read -r fn regs smem st ld; do
  short=$(echo "$fn" | sed "s/(.*//" | cut -c1-100)
  printf '%-5s %-7s %-7s %-6s %s\n' "$regs" "$smem" "$st" "$ld" "$short"
  [ "$st" != 0 ] || [ "$ld" != 0 ] && spills=$((spills + 1))
done < "$PTX_DIR/summary.tsv"
echo "(static shared memory only; attention kernels use dynamic shared memory, see the .cu headers)"
if [ $spills -eq 0 ] && [ -s "$PTX_DIR/summary.tsv" ]; then
  SUMMARY+=("PASS  no register spills in $(wc -l < "$PTX_DIR/summary.tsv") kernels")
else
  SUMMARY+=("FAIL  ptxas: $spills kernels spill (or no output)")
  FAILED=1
fi

echo
echo "=== summary ($(($(date +%s) - START)) s) ==="
printf '%s\n' "${SUMMARY[@]}"
exit $FAILED
