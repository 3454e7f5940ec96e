#!/usr/bin/env bash
# A checkpoint saved with one layout resumes in another and training continues with the same
# losses (1e-5 relative) as continuing on the original layout, the data loader at the same
# global position: 2x2x2 zero 1 -> 1x4x2 zero 0 -> 8x1x1 zero 3 -> 1x1x1 (data x tensor x
# pipeline), three steps each; for the GPT-2 debug model and for a llama of the same size
# (8 query heads on 4 k/v heads, untied head).
source "$(dirname "$0")/lib.sh"
make_byte_data "$work/data"
llama=(--set model.arch=llama --set model.n_head=8 --set model.n_kv_head=4 --set model.ffn_dim=48
       --set model.tie_embeddings=false)

chain() {  # name, then extra trainer arguments
local name=$1
shift
local model=("$@")
local common=(--set "data.train=$work/data/train_*.bin" --set "checkpoint.dir=$work/$name/ckpt")
mkdir -p "$work/$name"

"${MPIEXEC[@]}" -n 8 "$trainer" train configs/debug/layouts.yaml "${model[@]}" $(layout_args 2 2 2 1) \
  --set "checkpoint.dir=$work/$name/ref" --set "data.train=$work/data/train_*.bin" --set "log.metrics=$work/$name/ref.jsonl" \
  > "$work/$name/ref.log" 2>&1 || fail "reference run: $(cat "$work/$name/ref.log")"

hop() {  # ranks d t p z stop_at
  "${MPIEXEC[@]}" -n $1 "$trainer" train configs/debug/layouts.yaml "${model[@]}" $(layout_args $2 $3 $4 $5) "${common[@]}" \
    --stop-at $6 --set "log.metrics=$work/$name/chain.jsonl" > "$work/$name/hop$6.log" 2>&1 || fail "hop to step $6: $(cat "$work/$name/hop$6.log")"
  [[ -f "$work/$name/ckpt/step_$(printf %08d $6)/manifest.yaml" ]] || fail "no checkpoint at step $6"
}
hop 8 2 2 2 1 3
hop 8 1 4 2 0 6
grep -q "resuming from .*step_00000003 (step 3, saved with data 2 x tensor 2 x pipeline 2, zero 1)" "$work/$name/hop6.log" \
  || fail "hop 2 did not resume from step 3: $(cat "$work/$name/hop6.log")"
hop 8 8 1 1 3 9
hop 1 1 1 1 0 12
grep -q "saved with data 8 x tensor 1 x pipeline 1, zero 3" "$work/$name/hop12.log" || fail "hop 4: $(cat "$work/$name/hop12.log")"

ref=$(losses "$work/$name/ref.jsonl")
chain=$(losses "$work/$name/chain.jsonl")
same_losses "$chain" "$ref" 1e-5 || fail "$name: losses differ from the uninterrupted 2x2x2 run"
echo "$name"
echo "$chain" | paste - <(echo "$ref") | head -12
}

chain gpt2
chain llama "${llama[@]}"
echo "PASS: 12 steps over four layouts match the uninterrupted run"
