#!/usr/bin/env bash
# The benches of scripts/gpu_check.sh, sourced by gpu_check_steps.sh (never run alone): the
# command builder bench_cmd (each bench sets CMD, so it runs exactly what --dry-run prints),
# bench_step (one bench: its JSON line, profile table and comparison row), collect_benches
# (every bench so far into OUT's bench.jsonl and profiles.txt), and the plan_/step_ pairs of the
# bench steps of STEP_TABLE. The helpers they use (x, show, quote, result, verdict, need_trainer,
# last_line) and the variables (ROOT, WORK, OUT, TRAINER, NVSMI, COMPARE, DRY_RUN) come from
# gpu_check_steps.sh and gpu_check.sh's driver.
# shellcheck shell=bash disable=SC2317,SC2034

bench_profile_flag() {  # --profile when this trainer's bench has it (being added)
  if [ "$DRY_RUN" = 1 ]; then echo "--profile"; return; fi
  "$TRAINER" bench --help 2>/dev/null | grep -q -- '--profile' && echo "--profile"
}
bench_cmd() {  # bench_cmd 124m|1p5b|cudnn|cudnn_1p5b|graphs_off|graphs_step
  local recipe mb gb steps warmup attention=auto graphs=()
  case "$1" in
    124m) recipe=gpt2-124m.yaml mb=32 gb=32 steps=20 warmup=3 ;;
    1p5b) recipe=gpt2-1.5b.yaml mb=8 gb=64 steps=3 warmup=1 ;;
    cudnn) recipe=gpt2-124m.yaml mb=32 gb=32 steps=20 warmup=3 attention=cudnn ;;
    cudnn_1p5b) recipe=gpt2-1.5b.yaml mb=8 gb=64 steps=3 warmup=1 attention=cudnn ;;
    graphs_*) recipe=quickstart.yaml mb=32 gb=64 steps=100 warmup=3 graphs=(--set "train.graphs=${1#graphs_}") ;;
  esac
  CMD=("$TRAINER" bench "$ROOT/configs/$recipe" --set train.device=cuda --set train.precision=bf16
       --set parallel.data=1 --set "train.micro_batch=$mb" --set "train.global_batch=$gb"
       --set "train.attention=$attention" "${graphs[@]}" --steps "$steps" --warmup "$warmup" --json)
  # A graph's ops cannot be timed one by one: the graph benches compare whole steps.
  [ "${#graphs[@]}" = 0 ] || return 0
  local p
  p=$(bench_profile_flag)
  [ -n "$p" ] && CMD+=("$p")
  [ -n "$p" ] && bench_measured_ceilings && CMD+=(--ceilings measured)
}
# True on the GPUs whose ceilings are on record (flops.cpp, bf16: the plain "NVIDIA H200" and the
# H100 SXM the lent machines report), when this trainer's bench has --ceilings: %roof then reads
# against what a kernel can reach there.
bench_measured_ceilings() {
  [ "$DRY_RUN" = 1 ] && return 1
  "$TRAINER" bench --help 2>/dev/null | grep -q -- '--ceilings' || return 1
  case "$("$NVSMI" --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)" in
    "NVIDIA H200" | "NVIDIA H100 80GB HBM3") return 0 ;;
  esac
  return 1
}

bench_label() {  # bench_label 124m|1p5b|cudnn|cudnn_1p5b|graphs_off|graphs_step: the name in the comparison table
  case "$1" in
    cudnn) echo "gpt2-124m, attention cudnn" ;;
    cudnn_1p5b) echo "gpt2-1.5b, attention cudnn" ;;
    graphs_*) echo "quickstart 0.85M (32 x 64, 2 accumulated), train.graphs ${1#graphs_}" ;;
    *) echo "gpt2-${1/1p5b/1.5b}" ;;
  esac
}
bench_plan() {
  bench_cmd "$1"
  local how="(--profile when trainer bench has it; with --ceilings measured on an NVIDIA H200 or H100 SXM)"
  [[ $1 == graphs_* ]] && how="(no --profile: a graph's ops are not timed one by one)"
  show "$(quote "${CMD[@]}") > $WORK/bench_$1.out   $how"
  show "python3 $COMPARE bench $WORK/bench_$1.out $WORK/bench_$1.json $WORK/profile_$1.txt $(quote "$(bench_label "$1")")"
  show "(every bench so far -> $OUT/bench.jsonl, one line each; their profiles -> $OUT/profiles.txt)"
}
# The device returns at most 8 files from OUT: the benches share two, rewritten after each one.
collect_benches() {
  local f names=()
  for f in "$WORK"/bench_*.json; do [ -f "$f" ] && names+=("$f"); done
  [ "${#names[@]}" -gt 0 ] || return 0
  python3 - "${names[@]}" >"$OUT/bench.jsonl" <<'PY'
import json, os, sys
for path in sys.argv[1:]:
    obj = json.load(open(path))
    obj["check"] = os.path.basename(path)[len("bench_"):-len(".json")]
    print(json.dumps(obj, sort_keys=True))
PY
  : >"$OUT/profiles.txt"
  for f in "$WORK"/profile_*.txt; do [ -f "$f" ] && { cat "$f"; echo; } >>"$OUT/profiles.txt"; done
  return 0
}
bench_step() {  # bench_step 124m|1p5b|cudnn|cudnn_1p5b
  need_trainer || return $?
  local out="$WORK/bench_$1.out" err="$WORK/bench_$1.err" rc
  rm -f "$WORK/bench_$1.json" "$WORK/profile_$1.txt"
  bench_cmd "$1"
  # stderr (and the command line) live into the log; stdout (the JSON line) into a file.
  x "${CMD[@]}" 2>&1 >"$out" | tee "$err"
  rc=${PIPESTATUS[0]}
  cat "$out"
  if [ "$rc" != 0 ] && [[ $1 == cudnn* ]] && grep -q 'this build has no cuDNN' "$err"; then
    result "this build has no cuDNN (configure found none)"
    return 77
  fi
  if [ "$rc" != 0 ]; then result "bench exited $rc: $(last_line "$err")"; return 1; fi
  local label
  label=$(bench_label "$1")
  [[ " ${CMD[*]} " == *" --profile "* || $1 == graphs_* ]] || label="$label (no --profile in this trainer)"
  local v=0
  verdict bench "$out" "$WORK/bench_$1.json" "$WORK/profile_$1.txt" "$label" || v=$?
  collect_benches
  [ "$v" = 0 ] || return "$v"
  [ -f "$WORK/profile_$1.txt" ] && cat "$WORK/profile_$1.txt"
  return 0
}
plan_bench_124m() { bench_plan 124m; }
step_bench_124m() { bench_step 124m; }
plan_bench_1p5b() { bench_plan 1p5b; }
step_bench_1p5b() { bench_step 1p5b; }
# attention_ratio CUDNN OURS: "cuDNN attention 1.23x our kernels' tokens/s (A against B); " when
# both benches gave tokens/s, else nothing: which attention the goals' runs should use.
attention_ratio() {
  [ -f "$WORK/bench_$1.json" ] && [ -f "$WORK/bench_$2.json" ] || return 0
  python3 - "$WORK/bench_$1.json" "$WORK/bench_$2.json" <<'PY'
import json, sys
cudnn, ours = (json.load(open(p)).get("tokens_per_s") for p in sys.argv[1:])
if all(isinstance(v, (int, float)) and v > 0 for v in (cudnn, ours)):
    print(f"cuDNN attention {cudnn / ours:.2f}x our kernels' tokens/s ({cudnn:,.0f} against {ours:,.0f}); ", end="")
PY
}
bench_cudnn_step() {  # bench_cudnn_step CUDNN OURS: the cuDNN bench, its result led by the ratio
  bench_step "$1" || return $?
  result "$(attention_ratio "$1" "$2")$(head -n 1 "$STEP_RESULT")"
}
plan_bench_cudnn() { bench_plan cudnn; }
step_bench_cudnn() { bench_cudnn_step cudnn 124m; }
plan_bench_cudnn_1p5b() { bench_plan cudnn_1p5b; }
step_bench_cudnn_1p5b() { bench_cudnn_step cudnn_1p5b 1p5b; }

plan_bench_graphs() {
  bench_plan graphs_off
  bench_cmd graphs_step
  show "$(quote "${CMD[@]}") > $WORK/bench_graphs_step.out   (the same with train.graphs=step)"
}
# The launch-bound case: a 0.85M-parameter model's step is ~0.05 ms of floor and ~200 launches.
step_bench_graphs() {
  bench_step graphs_off || return $?
  local off_result
  off_result=$(head -n 1 "$STEP_RESULT")
  bench_step graphs_step || return $?
  local speed
  speed=$(python3 - "$WORK/bench_graphs_off.json" "$WORK/bench_graphs_step.json" <<'PY'
import json, sys
off, on = (json.load(open(p)) for p in sys.argv[1:])
g = on.get("graphs") or {}
print("tokens/s off {:.0f}, step {:.0f} ({:.2f}x); {} replays, {} nodes per graph at most".format(
    off["tokens_per_s"], on["tokens_per_s"], on["tokens_per_s"] / off["tokens_per_s"], g.get("replays"),
    g.get("max_nodes")))
PY
  ) || { result "could not compare the graph benches (off: $off_result)"; return 1; }
  result "$speed"
}
