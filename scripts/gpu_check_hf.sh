#!/usr/bin/env bash
# The hf_logits step of scripts/gpu_check.sh, sourced by it after gpu_check_steps.sh (never run
# alone): where python3 has transformers (the GPU machines do), a small llama and a small gpt2
# (configs/debug/tiny-llama.yaml, configs/debug/tiny.yaml) train 30 steps, are exported with
# `trainer ckpt export --format hf`, and each folder is loaded with
# AutoModelForCausalLM.from_pretrained(DIR) (scripts/hf_transformers_check.py): its fp32 logits
# on the ids of a greedy `trainer sample --logits` must equal trainer's own to 1e-4 relative,
# and its argmax must be the tokens trainer chose. SKIP when transformers is missing. The
# models run on the CPU (fp32) on both sides: the step checks the format, not the kernels.
# shellcheck shell=bash disable=SC2317,SC2034
HF_RTOL=1e-4
HF_MODELS="llama:configs/debug/tiny-llama.yaml gpt2:configs/debug/tiny.yaml"
HF_PROMPT="the whale "  # 10 bytes + 6 new tokens: within the tiny models' 16-token context
HF_CHECK="$ROOT/scripts/hf_transformers_check.py"

hf_cmds() {  # hf_cmds NAME RECIPE: sets HF_TRAIN, HF_EXPORT, HF_SAMPLE, HF_COMPARE
  local dir="$WORK/hf_$1"
  HF_TRAIN=("$TRAINER" train "$ROOT/$2" --set train.device=cpu --set train.precision=fp32 --set train.steps=30
            --set "data.train=$WORK/data/train_*.bin" --set "data.val=$WORK/data/val_*.bin" --set eval.every=0
            --set "checkpoint.dir=$dir/ckpt" --set log.metrics= --set log.every=10)
  HF_EXPORT=("$TRAINER" ckpt export "$dir/ckpt" --format hf --out "$dir/hf")
  HF_SAMPLE=("$TRAINER" sample "$dir/ckpt" --prompt "$HF_PROMPT" --tokens 6 --temperature 0
             --logits "$dir/trainer_logits.json")
  HF_COMPARE=(sys_python3 "$HF_CHECK" "$dir/hf" "$dir/trainer_logits.json" --rtol "$HF_RTOL")
}
plan_hf_logits() {
  echo "      (SKIP unless python3 -c 'import transformers' works; for each of $HF_MODELS:)"
  hf_cmds llama configs/debug/tiny-llama.yaml
  local c
  for c in HF_TRAIN HF_EXPORT HF_SAMPLE HF_COMPARE; do
    local -n cmd="$c"
    show "$(quote "${cmd[@]}")"
  done
}
step_hf_logits() {
  if ! sys_python3 -c 'import transformers, torch' 2>/dev/null; then
    result "python3 has no transformers (or torch): nothing to compare with"
    return 77
  fi
  need_trainer || return $?
  ensure_data || { result "trainer data prepare failed"; return 1; }
  local entry name recipe line fail=0 notes=()
  for entry in $HF_MODELS; do
    name="${entry%%:*}" recipe="${entry#*:}"
    hf_cmds "$name" "$recipe"
    rm -rf "$WORK/hf_$name"
    if ! { x "${HF_TRAIN[@]}" && x "${HF_EXPORT[@]}" && x "${HF_SAMPLE[@]}"; }; then
      notes+=("$name: trainer failed (see log.txt)")
      fail=1
      continue
    fi
    line=$(x "${HF_COMPARE[@]}" | tail -n 1) || fail=1
    [ -n "$line" ] || { line="hf_transformers_check.py printed nothing"; fail=1; }
    echo "$name: $line"
    notes+=("$name: ${line#FAIL: }")
  done
  result "$(IFS=';'; echo "${notes[*]}")"
  return "$fail"
}
