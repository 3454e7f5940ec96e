#!/usr/bin/env bash
# The trainer with train.device=cuda on the CPU emulator (trainer_emu; tests/kernels/cuda_emu/
# cuda_emu.cmake): CudaBackend, our kernels, cuda_matmul.cpp on the emulated cuBLASLt, CUDA
# events and stream capture, as a GPU run would take them, only slower. On the tiny model, as
# scripts/gpu_check.sh checks a GPU: fp32 losses within 1e-4 of the CPU's; bf16 finite,
# falling and within 2% of fp32; bf16 again and with train.graphs=step bit-identical to the
# first (the replays counted); bench --profile on cuda times each op with CUDA events; and,
# two processes each an emulated GPU of one node over the emulated NCCL (nccl_emu.cpp: MPI
# underneath, NCCL's stream order and rendezvous sends), data 2 with ZeRO-1 (reduce-scatter
# and parameter all-gathers in flight), the bf16 wire, tensor 2 and an interleaved pipeline
# (point-to-point and the ring's wrap-around communicators) against one emulated GPU; and
# train.attention: cudnn on the emulated cuDNN (cudnn_emu.cpp).
# Skipped (77) where the build has no trainer_emu (no CUDA toolkit or no python3).
source "$(dirname "$0")/lib.sh"
emu="${TRAINER_BUILD_DIR:-}/trainer_emu"
[ -x "$emu" ] || { echo "SKIP: no $emu (built with the CUDA toolkit and python3 only)"; exit 77; }
command -v mpiexec >/dev/null || { echo "SKIP: no mpiexec"; exit 77; }
make_byte_data "$work/data"
common=(--set "data.train=$work/data/train_*.bin" --set "data.val=$work/data/val_*.bin" --set train.steps=6
        --set eval.every=3 --set checkpoint.dir= --set log.every=1)

run() {  # run NAME DEVICE PRECISION ARGS...: 6 steps -> $work/NAME.jsonl
  local name="$1" device="$2" precision="$3"
  shift 3
  "${launch[@]}" "$emu" train configs/debug/tiny.yaml "${common[@]}" --set "train.device=$device" \
    --set "train.precision=$precision" --set "log.metrics=$work/$name.jsonl" "$@" >"$work/$name.log" 2>&1 ||
    fail "$name: $(cat "$work/$name.log")"
  [ "$(losses "$work/$name.jsonl" | wc -l)" = 6 ] || fail "$name: want 6 losses: $(cat "$work/$name.log")"
}
launch=()

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

# train.attention: cudnn, its graphs on the emulated cuDNN (cudnn_emu.cpp): within 2% of our
# kernels' bf16 run (both round P and dS to bf16, in different places), and its plans replayed
# from captured graphs bit-identical to its eager run.
run cuda_bf16_cudnn cuda bf16 --set train.attention=cudnn
run cuda_bf16_cudnn_graphs cuda bf16 --set train.attention=cudnn --set train.graphs=step
same_losses "$(losses "$work/cuda_bf16_cudnn.jsonl")" "$(losses "$work/cuda_bf16.jsonl")" 0.02 || fail "cudnn against flash"
same_losses "$(losses "$work/cuda_bf16_cudnn_graphs.jsonl")" "$(losses "$work/cuda_bf16_cudnn.jsonl")" 0 ||
  fail "cudnn with graphs differs from cudnn"
! same_losses "$(losses "$work/cuda_bf16_cudnn.jsonl")" "$(losses "$work/cuda_bf16.jsonl")" 0 >/dev/null ||
  fail "cudnn's losses are flash's to the bit: did cuDNN run? $(head -5 "$work/cuda_bf16_cudnn.log")"
echo "ok: attention cudnn within 2% of flash, and with graphs bit-identical: $(losses "$work/cuda_bf16_cudnn.jsonl" | tail -1)"

text=$("$emu" bench configs/debug/tiny.yaml --set train.device=cuda --set train.precision=bf16 --steps 2 --warmup 1 \
  --profile 2>&1) || fail "bench --profile on cuda: $text"
grep -q "op profile (rank 0, per step" <<<"$text" || fail "no op table: $text"
grep -Eq " matmul(\+[a-z_+]+)? +M=32 N=96 K=32 NT bf16" <<<"$text" && grep -Eq " attention_forward +\(" <<<"$text" ||
  fail "no matmul or attention row: $text"
echo "ok: bench --profile on the emulated GPU: $(grep -c '^ ' <<<"$text") table lines"

# Two emulated GPUs against one. The bf16 wire rounds each reduced gradient (1e-3, as
# gpu_check.sh) and must not give the fp32 wire's losses (or bf16 did not travel); tensor 2 in
# bf16 is held as bf16 is.
run cuda_fp32_4layers cuda fp32 --set model.n_layer=4
# The deferred rows run the emulator's adversarial order (TRAINER_EMU_ORDER=deferred: work
# runs only when the host blocks, the streams created last first), so a collective that does not
# wait for the compute stream's event reads its buffer before the kernels that write it.
for row in "data2_zero1 eager fp32 cuda_fp32 1e-4 parallel.data=2 parallel.zero=1" \
           "data2_zero1_bf16wire eager fp32 cuda_fp32 1e-3 parallel.data=2 parallel.zero=1 parallel.grad_reduce_dtype=bf16" \
           "tensor2_bf16 eager bf16 cuda_bf16 0.02 parallel.tensor=2" \
           "interleaved2 eager fp32 cuda_fp32_4layers 1e-4 model.n_layer=4 parallel.pipeline=2 parallel.schedule=interleaved parallel.virtual_stages=2" \
           "data2_zero3_deferred deferred fp32 cuda_fp32 1e-4 parallel.data=2 parallel.zero=3" \
           "tensor2_deferred deferred fp32 cuda_fp32 1e-4 parallel.tensor=2"; do
  read -r name order precision ref rtol keys <<<"$row"
  launch=("${MPIEXEC[@]}" -x "TRAINER_EMU_ORDER=$order" -n 2)
  sets=()
  for key in $keys; do sets+=(--set "$key"); done
  run "$name" cuda "$precision" "${sets[@]}"
  grep -q "device cuda:0 (.*) = CUDA emulator" "$work/$name.log" || fail "$name: not on the emulated GPUs: $(head -3 "$work/$name.log")"
  same_losses "$(losses "$work/$name.jsonl")" "$(losses "$work/$ref.jsonl")" "$rtol" || fail "$name against $ref"
  echo "ok: $name on two emulated GPUs within $rtol of $ref"
done
! same_losses "$(losses "$work/data2_zero1_bf16wire.jsonl")" "$(losses "$work/data2_zero1.jsonl")" 0 >/dev/null ||
  fail "the bf16 wire gave the fp32 wire's losses"
