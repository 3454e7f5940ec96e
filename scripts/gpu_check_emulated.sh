#!/usr/bin/env bash
# A rehearsal of scripts/gpu_check.sh without a GPU: gpu_check.sh itself runs its trainer steps
# against trainer_emu, the trainer linked against the CPU emulator of the CUDA path
# (tests/kernels/cuda_emu: our kernels, CudaBackend, cuBLASLt, graphs and NCCL over MPI), posing
# as a node of two GPUs. So the steps' commands, comparisons and summary run on the CUDA path's
# own code before a GPU lease spends device time on them. It says nothing about speed, and
# the build, ctest, resources, bench, HF and sanitizer steps need a GPU (they are left out).
#
# Usage: scripts/gpu_check_emulated.sh [BUILD [STEPS]]
#   BUILD  a CUDA-enabled build folder holding trainer_emu (default: build)
#   STEPS  gpu_check.sh steps, comma-separated (default: data,fp32,bf16,determinism,multi_gpu)
# Output: BUILD/gpu_check_emulated/gpu_check (summary.txt, log.txt, losses.tsv). Budgets are
# multiplied by 12 (GPU_CHECK_BUDGET_SCALE): on 2 cores the default steps took 7 minutes (427 s).
# Exit code: gpu_check.sh's (0 all passed), 2 usage, 77 no trainer_emu in BUILD.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$(cd "${1:-$ROOT/build}" 2>/dev/null && pwd)" || { echo "gpu_check_emulated: no build folder '${1:-}'" >&2; exit 2; }
STEPS="${2:-data,fp32,bf16,determinism,multi_gpu}"
EMU="$BUILD/trainer_emu"
[ -x "$EMU" ] || { echo "gpu_check_emulated: no $EMU (configure with the CUDA toolkit and python3)" >&2; exit 77; }

# gpu_check.sh runs DIR/trainer; an nvidia-smi that answers as the emulator's first two devices.
DIR="$BUILD/gpu_check_emulated"
mkdir -p "$DIR"
ln -sf "$EMU" "$DIR/trainer"
cat >"$DIR/nvidia-smi" <<'EOF'
#!/usr/bin/env bash
# nvidia-smi as the CUDA emulator's node answers it (scripts/gpu_check_emulated.sh).
case "$*" in
  -L) printf 'GPU 0: CUDA emulator (UUID: GPU-emulated-0)\nGPU 1: CUDA emulator (UUID: GPU-emulated-1)\n' ;;
  *compute_cap*) printf '9.0\n9.0\n' ;;
  *name,memory.total,driver_version*) printf 'CUDA emulator, 81920 MiB, none\n' ;;
  *) echo "CUDA emulator" ;;
esac
EOF
chmod +x "$DIR/nvidia-smi"

export GPU_CHECK_NVIDIA_SMI="$DIR/nvidia-smi" GPU_CHECK_BUDGET_SCALE=12
unset OUT
exec "$ROOT/scripts/gpu_check.sh" --build "$DIR" --bundle "$DIR/no-bundle" --only "$STEPS" --deadline 5400
