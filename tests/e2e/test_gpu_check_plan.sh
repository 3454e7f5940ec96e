#!/usr/bin/env bash
# scripts/gpu_check.sh without a GPU: the plan (--dry-run lists every step with its budget and
# commands, runs nothing), the no-GPU exit (77 with a clear message), and the step driver in fake
# mode (GPU_CHECK_FAKE=1: every step's body is a sleep): steps whose budget no longer fits the
# deadline are skipped with the note, a step is cut off at the time left, a failing step is FAIL
# with exit 1, a bundle's env.sh is sourced and reported, SIGTERM mid-step leaves a summary with
# the earlier steps. Then the comparison helper (scripts/gpu_check_compare.py) on made-up
# metrics, bench output and cuobjdump / ptxas text. The trainer ($1) is not used.
source "$(dirname "$0")/lib.sh"
script=scripts/gpu_check.sh
compare=scripts/gpu_check_compare.py
steps=(prereqs gpu build ctest resources data fp32 bf16 determinism bench_124m bench_1p5b bench_cudnn bench_cudnn_1p5b bench_graphs multi_gpu hf_logits memcheck racecheck)
unset OUT GPU_CHECK_FAKE GPU_CHECK_FAKE_SLEEP GPU_CHECK_FAKE_BUDGET GPU_CHECK_FAKE_FAIL GPU_CHECK_FAKE_SLOW \
  GPU_CHECK_FAKE_SLOW_S GPU_CHECK_NVIDIA_SMI GPU_CHECK_BUDGET_SCALE
nobundle=(--bundle "$work/no-bundle")

# (a) --dry-run: every step with its budget and commands, exit 0, nothing created.
out=$("$script" --dry-run --build "$work/dry" "${nobundle[@]}") || fail "--dry-run exited $?: $out"
for s in "${steps[@]}"; do
  grep -qE "^ *[0-9]+\. $s +[0-9]+ s  " <<<"$out" || fail "--dry-run does not list step $s with a budget: $out"
done
for c in "cmake -S" "ctest --test-dir" "trainer train" "trainer bench" "compute-sanitizer --tool memcheck" \
         "compute-sanitizer --tool racecheck" "cuobjdump --dump-resource-usage" "mpiexec" "deadline 540 s" \
         "ckpt export" "hf_transformers_check.py"; do
  grep -qF -- "$c" <<<"$out" || fail "--dry-run does not show '$c'"
done
[[ ! -e "$work/dry" ]] || fail "--dry-run created the build directory"
out=$("$script" --dry-run --deadline 100 "${nobundle[@]}" --build "$work/dry") || fail "--dry-run --deadline"
grep -q "deadline 100 s" <<<"$out" || fail "--dry-run ignores --deadline"
# GPU_CHECK_BUDGET_SCALE multiplies every budget (scripts/gpu_check_emulated.sh: the emulator).
out=$(GPU_CHECK_BUDGET_SCALE=12 "$script" --dry-run "${nobundle[@]}" --build "$work/dry") || fail "--dry-run, scale 12"
grep -qE "^ *7\. fp32 +480 s  " <<<"$out" || fail "GPU_CHECK_BUDGET_SCALE=12 does not make fp32's 40 s budget 480 s: $out"

# Usage errors exit 2.
rc=0
GPU_CHECK_BUDGET_SCALE=0 "$script" --dry-run --build "$work/usage" >/dev/null 2>&1 || rc=$?
[[ $rc == 2 ]] || fail "GPU_CHECK_BUDGET_SCALE=0: exit $rc, want 2"
for args in "--deadline" "--deadline abc" "--deadline 0" "--frobnicate" "--only nosuchstep" "extra-positional"; do
  rc=0
  # shellcheck disable=SC2086  # word splitting intended
  "$script" $args --build "$work/usage" >/dev/null 2>&1 || rc=$?
  [[ $rc == 2 ]] || fail "'$args': exit $rc, want 2"
done

# (b) No GPU, no fake mode: exit 77 with a clear message, for a missing and a failing nvidia-smi.
rc=0
msg=$(GPU_CHECK_NVIDIA_SMI="$work/no-such-nvidia-smi" OUT="$work/out_b" "$script" --build "$work/b" "${nobundle[@]}" 2>&1) || rc=$?
[[ $rc == 77 ]] || fail "missing nvidia-smi: exit $rc, want 77: $msg"
grep -q "no GPU: nvidia-smi .* not found" <<<"$msg" || fail "missing nvidia-smi: unclear message: $msg"
printf '#!/bin/sh\necho "NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver" >&2\nexit 9\n' \
  >"$work/failing-smi"
chmod +x "$work/failing-smi"
rc=0
msg=$(GPU_CHECK_NVIDIA_SMI="$work/failing-smi" OUT="$work/out_b" "$script" --build "$work/b" "${nobundle[@]}" 2>&1) || rc=$?
[[ $rc == 77 ]] || fail "failing nvidia-smi: exit $rc, want 77: $msg"
grep -q "no GPU: nvidia-smi failed: NVIDIA-SMI has failed" <<<"$msg" || fail "failing nvidia-smi: unclear message: $msg"
[[ ! -e "$work/out_b/summary.txt" ]] || fail "no GPU: a summary was written for a run that did nothing"

# (c) Deadline: budget 5 s per step against a 9 s deadline; prereqs takes no time and gpu 6 s:
# prereqs (9 s left) and gpu (~9 s left) run, build (~3 s left) and everything after are skipped
# with the note. Each decision has at least 3 s of slack, so a loaded machine cannot flip one.
# A bundle's env.sh is sourced first (it sets a variable the fake steps do not need; the summary
# must say the bundle was used).
mkdir -p "$work/bundle"
# shellcheck disable=SC2016  # expanded when the script sources it
echo 'export GPU_CHECK_TEST_BUNDLE=1 PATH="$PATH"' >"$work/bundle/env.sh"
t0=$(date +%s)
rc=0
GPU_CHECK_FAKE=1 GPU_CHECK_FAKE_SLEEP=0 GPU_CHECK_FAKE_SLOW=gpu GPU_CHECK_FAKE_SLOW_S=6 GPU_CHECK_FAKE_BUDGET=5 \
  OUT="$work/out_c" "$script" --deadline 9 --build "$work/c" --bundle "$work/bundle" >"$work/c.txt" 2>&1 || rc=$?
took=$(($(date +%s) - t0))
[[ $rc == 0 ]] || fail "deadline run: exit $rc, want 0 (skips are not failures): $(cat "$work/c.txt")"
summary="$work/out_c/summary.txt"
[[ -f $summary ]] || fail "deadline run: no summary.txt in OUT"
cat "$summary"
grep -qE '^PASS +prereqs ' "$summary" || fail "prereqs did not run"
grep -qE '^PASS +gpu ' "$summary" || fail "gpu did not run"
for s in "${steps[@]:2}"; do
  grep -qE "^SKIP +$s +0s +needs ~5s, [0-9]+s left$" "$summary" || fail "$s not skipped with the deadline note"
done
grep -q "^bundle: used $work/bundle" "$summary" || fail "the summary does not say the bundle was used"
grep -q "^verdict: PASS" "$summary" || fail "no PASS verdict"
grep -q "SKIP build: needs ~5s" "$work/out_c/log.txt" || fail "log.txt lacks the skip note"
(( took <= 9 + 5 )) || fail "deadline 9 s: the run took ${took} s"
n=$(find "$work/out_c" -type f | wc -l)
(( n <= 8 )) || fail "$n files in OUT: $(ls "$work/out_c")"
# Every file a full run can write to OUT has a fixed name, and there are at most 8 of them (the
# device tool returns no more): the fake run above makes few, so read the scripts' own list.
out_files=$(grep -ohE '"\$OUT/[^" ]+' scripts/gpu_check*.sh | sed 's/^"\$OUT\///' | sort -u)
grep -q '\$' <<<"$out_files" && fail "a file in OUT named from a variable: $out_files"
n=$(wc -l <<<"$out_files")
(( n <= 8 )) || fail "$n files can be written to OUT: $out_files"
for f in summary.txt log.txt bench.jsonl profiles.txt; do
  grep -qx "$f" <<<"$out_files" || fail "no $f among the OUT files: $out_files"
done
# The benches share bench.jsonl (one line each, named by "check") and profiles.txt.
(
  WORK="$work/collect/work" OUT="$work/collect/out"
  mkdir -p "$WORK" "$OUT"
  # shellcheck source=/dev/null
  source scripts/gpu_check_steps.sh
  echo '{"tokens_per_s": 1}' >"$WORK/bench_124m.json"
  echo '{"tokens_per_s": 2}' >"$WORK/bench_cudnn.json"
  echo "# gpt2-124m table" >"$WORK/profile_124m.txt"
  collect_benches
  [[ $(wc -l <"$OUT/bench.jsonl") == 2 ]] || fail "bench.jsonl: $(cat "$OUT/bench.jsonl")"
  grep -qx '{"check": "124m", "tokens_per_s": 1}' "$OUT/bench.jsonl" || fail "bench.jsonl: $(cat "$OUT/bench.jsonl")"
  grep -qx '{"check": "cudnn", "tokens_per_s": 2}' "$OUT/bench.jsonl" || fail "bench.jsonl: $(cat "$OUT/bench.jsonl")"
  grep -qx '# gpt2-124m table' "$OUT/profiles.txt" || fail "profiles.txt: $(cat "$OUT/profiles.txt")"
  # The cuDNN benches' results lead with their speed against our kernels', when both ran.
  ratio=$(attention_ratio cudnn 124m)
  [[ $ratio == "cuDNN attention 2.00x our kernels' tokens/s (2 against 1); " ]] || fail "attention_ratio: '$ratio'"
  [[ -z $(attention_ratio cudnn_1p5b 1p5b) ]] || fail "attention_ratio without the benches: not empty"
) || exit 1

# The timeout is capped at the time left: a step that would sleep 60 s is cut at the deadline.
t0=$(date +%s)
rc=0
GPU_CHECK_FAKE=1 GPU_CHECK_FAKE_SLEEP=0 GPU_CHECK_FAKE_BUDGET=1 GPU_CHECK_FAKE_SLOW=gpu GPU_CHECK_FAKE_SLOW_S=60 \
  OUT="$work/out_t" "$script" --deadline 4 --build "$work/t" "${nobundle[@]}" >"$work/t.txt" 2>&1 || rc=$?
took=$(($(date +%s) - t0))
cat "$work/out_t/summary.txt"
[[ $rc == 1 ]] || fail "cut-off step: exit $rc, want 1"
grep -qE '^FAIL +gpu +[0-9]+s +timed out after [0-9]+s' "$work/out_t/summary.txt" || fail "gpu not FAIL 'timed out'"
grep -qE '^SKIP +racecheck +0s +needs ~1s, 0s left' "$work/out_t/summary.txt" || fail "racecheck not skipped after the cut"
grep -q "^bundle: none" "$work/out_t/summary.txt" || fail "the summary does not say no bundle was used"
(( took <= 4 + 8 )) || fail "deadline 4 s with a 60 s step: the run took ${took} s"

# (d) A failing step: FAIL in the summary, the other steps still run, exit 1.
rc=0
GPU_CHECK_FAKE=1 GPU_CHECK_FAKE_SLEEP=0 GPU_CHECK_FAKE_FAIL=fp32,gpu OUT="$work/out_d" \
  "$script" --build "$work/d" "${nobundle[@]}" >"$work/d.txt" 2>&1 || rc=$?
[[ $rc == 1 ]] || fail "failing step: exit $rc, want 1: $(cat "$work/d.txt")"
grep -qE '^FAIL +fp32 +[0-9]+s +fake failure' "$work/out_d/summary.txt" || fail "fp32 not FAIL"
grep -qE '^FAIL +gpu ' "$work/out_d/summary.txt" || fail "gpu not FAIL"
grep -qE '^PASS +racecheck ' "$work/out_d/summary.txt" || fail "steps after a failure did not run"
grep -q '^verdict: FAIL: 2 failed (gpu fp32)' "$work/out_d/summary.txt" || fail "verdict: $(tail -1 "$work/out_d/summary.txt")"

# --only: the other steps are SKIP "not selected".
rc=0
GPU_CHECK_FAKE=1 GPU_CHECK_FAKE_SLEEP=0 OUT="$work/out_o" "$script" --only gpu,memcheck --build "$work/o" \
  "${nobundle[@]}" >/dev/null 2>&1 || rc=$?
[[ $rc == 0 ]] || fail "--only: exit $rc"
[[ $(grep -cE '^PASS' "$work/out_o/summary.txt") == 2 ]] || fail "--only gpu,memcheck: $(cat "$work/out_o/summary.txt")"
grep -qE '^SKIP +build +0s +not selected' "$work/out_o/summary.txt" || fail "--only: build not 'not selected'"

# SIGTERM during a long step: the run stops promptly, the summary has the earlier steps and the
# interrupted one.
# The slow step's sleep has a length no other process on the machine uses (this shell's pid as
# the fraction), so pgrep below finds only this test's own sleep.
slow_s="120.$$"
GPU_CHECK_FAKE=1 GPU_CHECK_FAKE_SLEEP=0.1 GPU_CHECK_FAKE_SLOW=build GPU_CHECK_FAKE_SLOW_S="$slow_s" OUT="$work/out_k" \
  "$script" --build "$work/k" "${nobundle[@]}" >"$work/k.txt" 2>&1 &
pid=$!
for _ in $(seq 100); do
  grep -q '^RUN   build' "$work/out_k/summary.txt" 2>/dev/null && break
  sleep 0.1
done
grep -q '^RUN   build' "$work/out_k/summary.txt" || { kill "$pid"; fail "the summary never showed build running"; }
t0=$(date +%s)
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
took=$(($(date +%s) - t0))
cat "$work/out_k/summary.txt"
[[ $rc == 143 ]] || fail "SIGTERM: exit $rc, want 143"
(( took <= 5 )) || fail "SIGTERM: took ${took} s to stop"
grep -qE '^PASS +prereqs ' "$work/out_k/summary.txt" || fail "SIGTERM: summary lost prereqs"
grep -qE '^PASS +gpu ' "$work/out_k/summary.txt" || fail "SIGTERM: summary lost gpu"
grep -qE '^FAIL +build +[0-9]+s +interrupted by SIGTERM' "$work/out_k/summary.txt" || fail "SIGTERM: build not marked"
grep -q '^verdict: incomplete (interrupted by SIGTERM; not run: ctest,resources,' "$work/out_k/summary.txt" \
  || fail "SIGTERM: verdict: $(tail -1 "$work/out_k/summary.txt")"
sleep 0.5
! pgrep -f "sleep $slow_s" >/dev/null || fail "SIGTERM: the step's sleep $slow_s is still running"

# ---- the comparison helper ----
metrics() {  # metrics FILE LOSS...: a metrics file with steps 1.. and these losses (+ an eval record)
  local f="$1" i=0 l
  shift
  : >"$f"
  echo '{"step": 0, "val_loss": 5.6}' >>"$f"
  for l in "$@"; do
    i=$((i + 1))
    echo "{\"step\": $i, \"loss\": $l, \"lr\": 0.001, \"grad_norm\": 1.5}" >>"$f"
  done
}
expect() {  # expect RC PATTERN CMD...: the helper exits RC and prints PATTERN
  local want="$1" pattern="$2" got=0 o
  shift 2
  o=$(python3 "$compare" "$@") || got=$?
  [[ $got == "$want" ]] || fail "$compare $*: exit $got, want $want: $o"
  grep -qE -- "$pattern" <<<"$o" || fail "$compare $*: '$o' lacks '$pattern'"
}
m="$work/m"
mkdir -p "$m"
metrics "$m/a" 5.5 4.8 4.1 3.0
metrics "$m/b" 5.50001 4.80002 4.1 3.0002
metrics "$m/c" 5.5 4.8 4.2 3.0
metrics "$m/short" 5.5 4.8
metrics "$m/nan" 5.5 null 4.1 3.0
metrics "$m/rising" 5.5 5.6 5.7 5.8
metrics "$m/off" 5.5 4.8 4.1 3.1
expect 0 '^4 steps agree to 0.0001 \(worst rel 6.7e-05 at step 4' losses "$m/a" "$m/b"
expect 1 '^FAIL: worst step 3: 4.1 vs 4.2' losses "$m/a" "$m/c"
expect 1 'different steps' losses "$m/a" "$m/short"
expect 1 'not finite at step 2' losses "$m/a" "$m/nan"
expect 0 'within 0.01% of fp32' bf16 "$m/b" "$m/a"
expect 1 'bf16 loss not finite at step 2' bf16 "$m/nan" "$m/a"
expect 1 'not falling' bf16 "$m/rising" "$m/a"
expect 1 '3.33% > 2%' bf16 "$m/off" "$m/a"
expect 0 '4 losses bit-identical' identical "$m/a" "$m/a"
expect 1 'first difference at step 1: loss 5.5 vs 5.50001.*bench --profile' identical "$m/a" "$m/b"
expect 2 'cannot read' losses "$m/a" "$m/missing"
expect 0 '4 steps x 2 runs' table "$m/losses.tsv" x="$m/a" y="$m/c" z="$m/missing"
[[ $(sed -n 4p "$m/losses.tsv") == $'3\t4.1\t4.2' ]] || fail "losses.tsv: $(cat "$m/losses.tsv")"

# bench: the JSON line among other output; a profile of either shape; missing fields tolerated.
printf 'some warning\n{"tokens_per_s": 412345.6, "mfu": 0.4123, "step_s": 0.0795, "forward_s": 0.025, "peak_memory_bytes": 24696061952, "device_memory_used_bytes": 26843545600, "init_params_s": 0.0123, "device_name": "NVIDIA H200", "peak_kind": "bf16 dense", "peak_flops_per_rank": 9.89e14, "steps": 20, "profile": {"matmul_forward": {"time_s": 0.3, "calls": 960}, "attention_forward": {"time_s": 0.1, "calls": 240}}}\n' \
  >"$m/bench.out"
expect 0 'gpt2-124m, 412,346 tok/s, MFU 41.2% of 989 TFLOP/s bf16 dense, step 0.080 s \(forward 0.025\), peak alloc 23.0 GiB, device used 25.0 GiB, parameter init 0.01 s, NVIDIA H200, top ops: matmul_forward 75%, attention_forward 25%' \
  bench "$m/bench.out" "$m/bench.json" "$m/profile.txt" gpt2-124m
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['tokens_per_s'] == 412345.6" "$m/bench.json" \
  || fail "bench JSON not saved"
grep -q '^matmul_forward  *0.3  *960  *75.0%' "$m/profile.txt" || fail "profile table: $(cat "$m/profile.txt")"
grep -q 'some warning' "$m/profile.txt" || fail "profile: the text lines are lost"
# Under train.graphs: step bench cannot split the replays: forward_s and backward_s are null and
# the line gives their sum.
echo '{"tokens_per_s": 2000, "step_s": 0.05, "forward_s": null, "backward_s": null, "forward_backward_s": 0.04, "optimizer_s": 0.01}' \
  >"$m/graphs.out"
expect 0 '^g, 2,000 tok/s, step 0.050 s \(forward\+backward 0.040, optimizer 0.010\)$' \
  bench "$m/graphs.out" "$m/graphs.json" "$m/profile_graphs.txt" g
# trainer bench's own shape: a list of rows per op and shape; an op's shapes add up in the note.
echo '{"tokens_per_s": 1000, "mfu": null, "peak_kind": "unknown peak", "profile": [{"op": "gelu", "shape": "4x8", "calls_per_step": 2, "seconds_per_step": 0.002}, {"op": "matmul", "shape": "4x8x8", "calls_per_step": 4, "seconds_per_step": 0.004}, {"op": "matmul", "shape": "4x8x32", "calls_per_step": 4, "seconds_per_step": 0.002}]}' \
  >"$m/bench2.out"
expect 0 '^x, 1,000 tok/s, MFU n/a \(unknown peak\), top ops: matmul 75%, gelu 25%$' \
  bench "$m/bench2.out" "$m/bench2.json" "$m/profile2.txt" x
grep -qE '^matmul +4x8x8 +4 +0.004 +50.0%$' "$m/profile2.txt" || fail "profile table: $(cat "$m/profile2.txt")"
# With bytes and FLOPs per step, the rates of each row (a row that computes nothing shows "-").
echo '{"tokens_per_s": 1000, "profile": [{"op": "matmul", "shape": "s", "calls_per_step": 1, "seconds_per_step": 0.002, "bytes_per_step": 4e9, "flops_per_step": 1.5e12}, {"op": "add", "shape": "s", "calls_per_step": 1, "seconds_per_step": 0.001, "bytes_per_step": 3e9, "flops_per_step": 0}]}' \
  >"$m/rates.out"
expect 0 '^z, 1,000 tok/s' bench "$m/rates.out" "$m/rates.json" "$m/profile_rates.txt" z
grep -qE '^matmul +s +1 +0.002 +4e\+09 +1.5e\+12 +66.7% +2000.0 +750.0 *$' "$m/profile_rates.txt" || fail "rates: $(cat "$m/profile_rates.txt")"
grep -qE '^add +s +1 +0.001 +3e\+09 +0 +33.3% +3000.0 +- *$' "$m/profile_rates.txt" || fail "rates: $(cat "$m/profile_rates.txt")"
# With floors (bench knew the bandwidth), the floor's share of each row and the rows furthest above.
echo '{"tokens_per_s": 1000, "profile": [{"op": "matmul", "shape": "s", "seconds_per_step": 0.004, "floor_seconds_per_step": 0.003}, {"op": "add", "shape": "t", "seconds_per_step": 0.003, "floor_seconds_per_step": 0.001}, {"op": "gelu", "shape": "u", "seconds_per_step": 0.001, "floor_seconds_per_step": null}]}' \
  >"$m/roof.out"
expect 0 '^w, 1,000 tok/s, top ops: matmul 50%, add 38%, gelu 12%; furthest above the roofline: add t \+2.000 ms, matmul s \+1.000 ms$' \
  bench "$m/roof.out" "$m/roof.json" "$m/profile_roof.txt" w
grep -qE '^matmul +s +0.004 +0.003 +50.0% +75 *$' "$m/profile_roof.txt" || fail "%roof: $(cat "$m/profile_roof.txt")"
grep -qE '^gelu +u +0.001 +- +12.5% +- *$' "$m/profile_roof.txt" || fail "%roof without a floor: $(cat "$m/profile_roof.txt")"
# The figures the floors used, when bench names them: in the summary and above the table.
echo '{"tokens_per_s": 1000, "roofline": "4300 GB/s (measured) and 790 TFLOP/s (measured)", "profile": [{"op": "matmul", "shape": "s", "seconds_per_step": 0.004, "floor_seconds_per_step": 0.003}]}' \
  >"$m/roof2.out"
expect 0 '^v, 1,000 tok/s, top ops: matmul 100%; furthest above the roofline: matmul s \+1.000 ms \(floors at 4300 GB/s \(measured\) and 790 TFLOP/s \(measured\)\)$' \
  bench "$m/roof2.out" "$m/roof2.json" "$m/profile_roof2.txt" v
grep -q '^# %roof: each op.s floor at 4300 GB/s (measured) and 790 TFLOP/s (measured) as a share of its time$' "$m/profile_roof2.txt" \
  || fail "roofline header: $(cat "$m/profile_roof2.txt")"
echo '{"tokens_per_s": 1000, "profile": null}' >"$m/bench3.out"
expect 0 '^y, 1,000 tok/s$' bench "$m/bench3.out" "$m/bench3.json" "$m/profile3.txt" y
[[ ! -e "$m/profile3.txt" ]] || fail "a profile file without a profile"
echo 'fatal: out of memory' >"$m/bench4.out"
expect 1 'no JSON object' bench "$m/bench4.out" "$m/bench4.json" "$m/profile4.txt" z

# resources: cuobjdump's two layouts (fields on the Function line or the next) and ptxas -v.
cat >"$m/cuobjdump.txt" <<'EOF'
Fatbin elf code:
================
arch = sm_90
Resource usage:
 Common:
  GLOBAL:0
 Function _Z1kPfS_:
  REG:17 STACK:0 SHARED:0 LOCAL:0 CONSTANT[0]:336 CONSTANT[2]:60 TEXTURE:0 SURFACE:0 SAMPLER:0
 Function _ZN7trainer4cuda12_GLOBAL__N_16gelu_kEPf: REG:40 STACK:16 SHARED:1024 LOCAL:0 CONSTANT[0]:368
EOF
expect 0 '^2 kernels \(sm_90\), max 40 registers \(gelu_k\); 1 use stack/local memory.*gelu_k' \
  resources "$m/res.tsv" "$m/cuobjdump.txt"
grep -q $'^k(float\\*, float\\*)\t17\t0\t0\t0' "$m/res.tsv" || fail "resources TSV: $(cat "$m/res.tsv")"
cat >"$m/ptxas.txt" <<'EOF'
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z1kPfS_' for 'sm_90'
ptxas info    : Function properties for _Z1kPfS_
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 18 registers, used 1 barriers, 256 bytes smem, 368 bytes cmem[0]
ptxas info    : Compiling entry function '_Z5big_kPf' for 'sm_90'
ptxas info    : Function properties for _Z5big_kPf
    8 bytes stack frame, 12 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 255 registers, used 0 barriers, 368 bytes cmem[0]
EOF
expect 0 '^2 kernels \(sm_90\), max 255 registers \(big_k\); 1 kernels spill \(ptxas -v\): big_k$' \
  resources "$m/res2.tsv" --ptxas "$m/ptxas.txt"
expect 0 '^3 kernels .*; 1 kernels spill \(ptxas -v\)' resources "$m/res3.tsv" --ptxas "$m/ptxas.txt" "$m/cuobjdump.txt"
grep -q $'^k(float\\*, float\\*)\t17\t0\t0\t0\t0\t0$' "$m/res3.tsv" || fail "merged resources TSV: $(cat "$m/res3.tsv")"
expect 1 'no kernels' resources "$m/res4.tsv" "$m/bench.out"
echo PASS
