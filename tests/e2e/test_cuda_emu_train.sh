#!/usr/bin/env bash
# The trainer with train.device=cuda on the CPU emulator (trainer_emu; tests/kernels/cuda_emu/
# cuda_emu.cmake): CudaBackend, our kernels, cuda_matmul.cpp on the emulated cuBLASLt, CUDA
# events and stream capture, as a GPU run would take them, only slower. On the tiny model, as
# scripts/gpu_check.sh checks a GPU: fp32 losses within 1e-4 of the CPU's; bf16 finite,
# falling and within 2% of fp32; bf16 again and with train.graphs=step bit-identical to the
# first (the replays counted); and bench --profile on cuda times each op with CUDA events.
# Skipped (77) where the build has no trainer_emu (no CUDA toolkit or no python3).
source "$(dirname "$0")/lib.sh"
emu="${TRAINER_BUILD_DIR:-}/trainer_emu"
[ -x "$emu" ] || { echo "SKIP: no $emu (built with the CUDA toolkit and python3 only)"; exit 77; }
make_byte_data "$work/data"
common=(--set "data.train=$work/data/train_*.bin" --set "data.val=$work/data/val_*.bin" --set train.steps=6
        --set eval.every=3 --set checkpoint.dir= --set log.every=1)

run() {  # run NAME DEVICE PRECISION ARGS...: 6 steps -> $work/NAME.jsonl
  local name="$1" device="$2" precision="$3"
  shift 3
  "$emu" train configs/debug/tiny.yaml "${common[@]}" --set "train.device=$device" --set "train.precision=$precision" \
    --set "log.metrics=$work/$name.jsonl" "$@" >"$work/$name.log" 2>&1 || fail "$name: $(cat "$work/$name.log")"
  [ "$(losses "$work/$name.jsonl" | wc -l)" = 6 ] || fail "$name: want 6 losses: $(cat "$work/$name.log")"
}

run cpu_fp32 cpu fp32
run cuda_fp32 cuda fp32
grep -q "device cuda:0 (f32) = CUDA emulator" "$work/cuda_fp32.log" || fail "cuda_fp32 did not run on the emulated GPU: $(head -5 "$work/cuda_fp32.log")"
same_losses "$(losses "$work/cuda_fp32.jsonl")" "$(losses "$work/cpu_fp32.jsonl")" 1e-4 || fail "fp32 on cuda against the CPU"
echo "ok: fp32 on the emulated GPU within 1e-4 of the CPU: $(losses "$work/cuda_fp32.jsonl" | tail -1)"

run cuda_bf16 cuda bf16
losses "$work/cuda_bf16.jsonl" | awk 'NR == 1 { first = $2 } { if ($2 != $2 + 0 || $2 == "nan") bad = 1; last = $2 }
  END { exit (bad || !(last < first)) }' || fail "bf16 losses not finite and falling: $(losses "$work/cuda_bf16.jsonl")"
same_losses "$(losses "$work/cuda_bf16.jsonl")" "$(losses "$work/cuda_fp32.jsonl")" 0.02 || fail "bf16 against fp32"
echo "ok: bf16 within 2% of fp32"

# 6 steps x 2 micro-batches: each kind runs eagerly once, is captured at step 2, replayed after.
run cuda_bf16_again cuda bf16
run cuda_bf16_graphs cuda bf16 --set train.graphs=step
for other in cuda_bf16_again cuda_bf16_graphs; do
  same_losses "$(losses "$work/$other.jsonl")" "$(losses "$work/cuda_bf16.jsonl")" 0 || fail "$other differs from cuda_bf16"
done
grep -q "^train.graphs: step: 2 micro-batches eager, 2 graphs captured (.*), 10 replays$" "$work/cuda_bf16_graphs.log" ||
  fail "graphs: $(grep graphs "$work/cuda_bf16_graphs.log")"
echo "ok: bf16 again and with graphs bit-identical; $(grep '^train.graphs' "$work/cuda_bf16_graphs.log")"

text=$("$emu" bench configs/debug/tiny.yaml --set train.device=cuda --set train.precision=bf16 --steps 2 --warmup 1 \
  --profile 2>&1) || fail "bench --profile on cuda: $text"
grep -q "op profile (rank 0, per step" <<<"$text" || fail "no op table: $text"
grep -Eq " matmul(\+[a-z_+]+)? +M=32 N=96 K=32 NT bf16" <<<"$text" && grep -Eq " attention_forward +\(" <<<"$text" ||
  fail "no matmul or attention row: $text"
echo "ok: bench --profile on the emulated GPU: $(grep -c '^ ' <<<"$text") table lines"
