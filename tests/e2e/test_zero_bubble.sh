#!/usr/bin/env bash
# The zero_bubble schedule end to end: 4 stages (and 2 stages x data 2 with ZeRO 2) train what
# one process trains (losses to 1e-5), the start-of-run report shows its modelled bubble below
# 1f1b's, trace spans name the weight passes, and recomputation with it exits 2.
source "$(dirname "$0")/lib.sh"
make_byte_data "$work/data"
common=(--set "data.train=$work/data/train_*.bin" --set model.n_layer=8)
zb=(--set parallel.schedule=zero_bubble)

"$trainer" train configs/debug/layouts.yaml "${common[@]}" --set "checkpoint.dir=$work/ref" \
  --set "log.metrics=$work/ref.jsonl" > "$work/ref.log" 2>&1 || fail "one process: $(cat "$work/ref.log")"
ref=$(losses "$work/ref.jsonl")

"${MPIEXEC[@]}" -n 4 "$trainer" train configs/debug/layouts.yaml "${common[@]}" $(layout_args 1 1 4 0) "${zb[@]}" \
  --set "checkpoint.dir=$work/zb" --set "log.metrics=$work/zb.jsonl" --set "log.trace=$work/trace.json" --set "log.trace_steps=[2, 3]" \
  > "$work/zb.log" 2>&1 || fail "zero_bubble on 4 stages: $(cat "$work/zb.log")"
# 8 micro-batches on 4 stages: 1f1b idles 3/11 = 0.273 of an ideal step, this pass 0.172.
grep -q "pipeline: schedule zero_bubble, 4 stages, 8 micro-batches, bubble fraction 0.172" "$work/zb.log" \
  || fail "no zero_bubble pipeline line: $(grep pipeline "$work/zb.log")"
same_losses "$(losses "$work/zb.jsonl")" "$ref" 1e-5 || fail "zero_bubble losses differ from one process"
grep -q '"backward_weight"' "$work"/trace*.json || fail "no backward_weight spans in the trace: $(ls "$work")"

# Pipeline 2 x data 2, ZeRO 2: gradients reduce-scattered per unit after each weight pass.
"${MPIEXEC[@]}" -n 4 "$trainer" train configs/debug/layouts.yaml "${common[@]}" $(layout_args 2 1 2 2) "${zb[@]}" \
  --set "checkpoint.dir=$work/zb2" --set "log.metrics=$work/zb2.jsonl" > "$work/zb2.log" 2>&1 \
  || fail "zero_bubble 2 x 2 ZeRO 2: $(cat "$work/zb2.log")"
same_losses "$(losses "$work/zb2.jsonl")" "$ref" 1e-5 || fail "zero_bubble with ZeRO 2 differs from one process"
echo "$(losses "$work/zb.jsonl")" | paste - <(echo "$ref") | head -12

expect_exit2 "parallel.schedule: zero_bubble keeps each micro-batch's saved activations" \
  "$trainer" validate configs/debug/layouts.yaml --set parallel.pipeline=2 "${zb[@]}" --set train.recompute=gelu
echo "PASS: zero_bubble trains as one process does; recomputation with it exits 2"
