#!/usr/bin/env bash
# The step bodies of scripts/gpu_check.sh, sourced by it (never run alone): helpers, the
# command builders (each sets CMD, so a step runs exactly what --dry-run prints) and, per step
# of STEP_TABLE, step_NAME (runs it in its own process, prints one result line, returns 0 PASS,
# 77 SKIP, anything else FAIL) and plan_NAME (its commands for --dry-run). The variables they
# use (ROOT, BUILD, WORK, OUT, TRAINER, NVSMI, ...) are set by gpu_check.sh's driver.
# shellcheck shell=bash disable=SC2317,SC2034
# The benches' command builders and steps (bench_*, collect_benches) live in gpu_check_bench.sh.
# shellcheck source=scripts/gpu_check_bench.sh
source "$(dirname "${BASH_SOURCE[0]}")/gpu_check_bench.sh"
# ---------------------------------------------------------------- helpers

now_ms() {  # milliseconds since the epoch
  if [ -n "${EPOCHREALTIME:-}" ]; then
    local t="${EPOCHREALTIME/[.,]/}"
    echo $((t / 1000))
  else
    echo $(($(date +%s) * 1000))
  fi
}
in_list() { [[ ",$2," == *",$1,"* ]]; }      # in_list NAME "a,b,c"
quote() { printf '%q ' "$@"; }
x() {  # run a command, echoing it first (to stderr, so stdout stays the command's own)
  echo "+ $(quote "$@")" >&2
  "$@"
}
show() { echo "      \$ $*"; }               # a command line in the --dry-run plan
result() {  # result TEXT: the step's one-line result for the summary
  local text="${1#FAIL: }"
  printf '%s\n' "${text:0:400}" >"$STEP_RESULT"
}
sys_python3() {  # python3 with the machine's own library path (torch, transformers)
  env HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 LD_LIBRARY_PATH="${GPU_CHECK_SYSTEM_LD_LIBRARY_PATH-${LD_LIBRARY_PATH:-}}" \
    python3 "$@"
}
need_trainer() {
  [ -x "$TRAINER" ] && return 0
  result "no $TRAINER (build failed or skipped)"
  return 77
}
verdict() {  # verdict ARGS...: run the comparison helper; its last line is the result
  local out rc
  out=$(python3 "$COMPARE" "$@")
  rc=$?
  printf '%s\n' "$out"
  result "$(tail -n 1 <<<"$out")"
  return "$rc"
}
last_line() { grep -v '^[[:space:]]*$' "$1" 2>/dev/null | grep -v '^+ ' | tail -n 1 | cut -c1-200; }

find_tool() {  # find_tool NAME: on PATH or next to nvcc
  local t
  t=$(command -v "$1" 2>/dev/null) && { echo "$t"; return 0; }
  for t in "$CUDA_BIN/$1" "/usr/local/cuda/bin/$1" "/usr/local/cuda/compute-sanitizer/$1"; do
    [ -x "$t" ] && { echo "$t"; return 0; }
  done
  return 1
}

# ---------------------------------------------------------------- command builders
# Each sets the array CMD; the steps run it and --dry-run prints it, so both agree.

configure_cmd() {
  CMD=(cmake -S "$ROOT" -B "$BUILD")
  [ -f "$BUILD/CMakeCache.txt" ] || { command -v ninja >/dev/null && CMD+=(-G Ninja); }
  # -Xptxas=-v: ptxas reports registers, shared memory and spills of every kernel into the
  # build log as it compiles (no second compilation; the resources step reads it).
  CMD+=(-DCMAKE_BUILD_TYPE=Release -DTRAINER_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$ARCH" -DTRAINER_WERROR=OFF
        -DCMAKE_CUDA_FLAGS="${CUDAFLAGS:+$CUDAFLAGS }-Xptxas=-v")
  [ -x "$NVCC" ] && CMD+=(-DCMAKE_CUDA_COMPILER="$NVCC")
  # The top CMakeLists looks OpenBLAS up under the CMake variable CMAKE_PREFIX_PATH (the
  # bundle's); the environment variable alone does not set it.
  [ -n "${CMAKE_PREFIX_PATH:-}" ] && CMD+=(-DCMAKE_PREFIX_PATH="${CMAKE_PREFIX_PATH//:/;}")
}
build_cmd() {  # build_cmd [EXTRA_TARGET...]
  CMD=(cmake --build "$BUILD" -j "$(nproc)" --target trainer test_cuda test_parallel_cuda "$@")
}
tiny_cmd() {  # tiny_cmd NAME DEVICE PRECISION [ARGS...]: 20 steps, metrics in WORK/NAME.jsonl
  local name="$1" device="$2" precision="$3"
  shift 3
  # configs/debug/tiny.yaml with head size 64 (d_model 128, 2 heads) and 64 tokens, so the
  # tensor-core attention path runs; no evaluation, no checkpoints, every step logged.
  CMD=("$TRAINER" train "$ROOT/configs/debug/tiny.yaml" --set "train.device=$device"
       --set "train.precision=$precision" --set model.d_model=128 --set model.n_head=2
       --set model.seq_len=64 --set train.seq_len=64 --set train.steps=20
       --set "data.train=$WORK/data/train_*.bin" --set "data.val=$WORK/data/val_*.bin"
       --set eval.every=0 --set checkpoint.dir= --set log.every=1 --set "log.metrics=$WORK/$name.jsonl" "$@")
}
mpi_cmd() {  # mpi_cmd: the launcher for 2 ranks on this node
  CMD=(mpiexec --allow-run-as-root --oversubscribe -n 2 -x OMP_NUM_THREADS=4)
}
sanitizer_cmd() {  # sanitizer_cmd TOOL [doctest filters...]
  local tool="$1"
  shift
  CMD=("${SANITIZER:-compute-sanitizer}" --tool "$tool" --error-exitcode 99 --print-limit 20
       "$BUILD/tests/test_cuda" --duration=true "$@")
}

# ---------------------------------------------------------------- steps
# step_NAME runs the step (in its own process) and returns 0 PASS, 77 SKIP, else FAIL, after
# result "..."; plan_NAME prints its commands for --dry-run.

plan_prereqs() { echo "      (checks only: nvcc, cmake, c++, mpicc, python3, headers, OpenBLAS, NCCL)"; }
step_prereqs() {
  local missing=() optional=() dirs=(/usr/include /usr/local/include /usr/include/x86_64-linux-gnu) p h
  [ -x "$NVCC" ] || missing+=("nvcc (CUDA toolkit: on PATH, \$CUDACXX or /usr/local/cuda/bin)")
  command -v cmake >/dev/null || missing+=("cmake >= 3.25")
  command -v c++ >/dev/null || missing+=("c++ (a C++17 compiler)")
  command -v mpicc >/dev/null || missing+=("mpicc (OpenMPI development files)")
  command -v python3 >/dev/null || missing+=("python3 (the comparisons)")
  local prefixes=()
  IFS=: read -ra prefixes <<<"${CMAKE_PREFIX_PATH:-}"
  for p in "${prefixes[@]}"; do dirs+=("$p/include" "$p/include/x86_64-linux-gnu"); done
  for h in yaml-cpp/yaml.h CLI/CLI.hpp fmt/core.h doctest/doctest.h xxhash.h zlib.h zstd.h cblas.h; do
    local found=0 d
    for d in "${dirs[@]}"; do
      [ -e "$d/$h" ] || [ -e "$d/openblas-openmp/$h" ] || [ -e "$d/x86_64-linux-gnu/openblas-openmp/$h" ] && found=1
    done
    [ "$found" = 1 ] || missing+=("$h")
  done
  if ! { compgen -G "$CUDA_BIN/../lib*/libnccl.so*" >/dev/null ||
         compgen -G "$CUDA_BIN/../targets/*/lib/libnccl.so*" >/dev/null || ldconfig -p 2>/dev/null | grep -q 'libnccl\.so' ||
         python3 -c 'import importlib.util as u, sys; sys.exit(u.find_spec("nvidia.nccl") is None)' 2>/dev/null; }; then
    missing+=("NCCL (libnccl or the nvidia-nccl-cu13 wheel)")
  fi
  for p in ninja mpiexec compute-sanitizer cuobjdump c++filt; do find_tool "$p" >/dev/null || optional+=("$p"); done
  local versions
  versions="nvcc $("$NVCC" --version 2>/dev/null | grep -o 'release [0-9.]*' | cut -d' ' -f2), cmake $(cmake --version 2>/dev/null | head -1 | awk '{print $3}'), $(nproc) cores"
  echo "$versions; optional missing: ${optional[*]:-none}"
  if [ ${#missing[@]} -gt 0 ]; then
    printf 'MISSING (this machine has no network; add them to the bundle):\n'
    printf '  - %s\n' "${missing[@]}"
    result "missing: $(IFS=,; echo "${missing[*]}")"
    return 1
  fi
  result "$versions; optional missing: ${optional[*]:-none}"
}

GPU_QUERY=name,memory.total,driver_version,compute_cap,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem
plan_gpu() { show "$NVSMI"; show "$NVSMI --query-gpu=$GPU_QUERY --format=csv,noheader"; }
step_gpu() {
  x "$NVSMI"
  local line
  line=$(x "$NVSMI" --query-gpu="$GPU_QUERY" --format=csv,noheader | head -1)
  echo "$line"
  [ -n "$line" ] || { result "nvidia-smi --query-gpu printed nothing"; return 1; }
  result "$(awk -F', *' -v n="$NGPU" '{ for (i = 5; i <= 8; i++) sub(/ *MHz/, "", $i)
                                        printf "%s, %s, driver %s, cc %s, SM clock %s/%s MHz, memory clock %s/%s MHz (current/max), %d GPU(s)",
                                        $1, $2, $3, $4, $5, $6, $7, $8, n }' <<<"$line")"
}

nccl_targets() {  # test targets named after NCCL (for 2+ GPUs), when the build has any
  if [ -f "$BUILD/build.ninja" ]; then
    ninja -C "$BUILD" -t targets all 2>/dev/null | awk -F: '$1 !~ /[\/.]/ && tolower($1) ~ /nccl/ {print $1}'
  else
    cmake --build "$BUILD" --target help 2>/dev/null | awk '$1 == "..." && tolower($2) ~ /nccl/ {print $2}'
  fi | sort -u
}
plan_build() {
  configure_cmd
  show "$(quote "${CMD[@]}")"
  build_cmd
  show "$(quote "${CMD[@]}") [+ NCCL test targets with 2+ GPUs]"
}
step_build() {
  local extra=() t0 t1
  t0=$(now_ms)
  configure_cmd
  x "${CMD[@]}" || { result "configure failed (cmake -S $ROOT -B $BUILD: see log.txt)"; return 1; }
  t1=$(now_ms)
  [ "$NGPU" -ge 2 ] && mapfile -t extra < <(nccl_targets)
  build_cmd "${extra[@]}"
  local log="$WORK/build.txt" rc
  x "${CMD[@]}" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  # Keep the ptxas lines of the last build that compiled kernels (an up-to-date tree prints none).
  grep -q 'ptxas info' "$log" && grep -E 'ptxas info|bytes stack frame' "$log" >"$WORK/ptxas.txt"
  [ "$rc" = 0 ] || { result "build failed (see log.txt): $(grep -m1 -E 'error|Error' "$log" | cut -c1-150)"; return 1; }
  local gen
  gen=$(grep -m1 '^CMAKE_GENERATOR:' "$BUILD/CMakeCache.txt" | cut -d= -f2)
  result "trainer + test_cuda + test_parallel_cuda${extra[*]:+ + ${extra[*]}} for sm_$ARCH ($gen, $(nproc) jobs): configure $(((t1 - t0) / 1000)) s, build $((($(now_ms) - t1) / 1000)) s"
}

plan_ctest() { show "ctest --test-dir $BUILD -L cuda -j 4 --output-on-failure --timeout 120"; }
step_ctest() {
  [ -x "$BUILD/tests/test_cuda" ] || { result "no $BUILD/tests/test_cuda (build failed or skipped)"; return 77; }
  local log="$WORK/ctest.txt" rc
  # Four at a time: each case is its own process, most of it CUDA, cuBLASLt and cuDNN set-up.
  x ctest --test-dir "$BUILD" -L cuda -j 4 --output-on-failure --timeout 120 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  local total failed skipped names
  total=$(grep -oE 'tests failed out of [0-9]+' "$log" | grep -oE '[0-9]+$' | tail -1)
  failed=$(grep -oE '[0-9]+ tests failed' "$log" | grep -oE '^[0-9]+' | tail -1)
  skipped=$(grep -c '\*\*\*Skipped\|Not Run' "$log")
  names=$(sed -n '/The following tests FAILED:/,$p' "$log" | grep -oE ' - [^(]+' | sed 's/^ - //; s/ *$//' | paste -sd, | cut -c1-250)
  # Which cuBLASLt epilogues ran fused (a refused one falls back silently): the message of
  # the test that counts them, printed with -s whether it passed or not.
  local ran
  ran=$("$BUILD/tests/test_cuda" -tc='matmul: the bf16 epilogues run fused on aligned operands' -s 2>&1 |
    grep -oE 'cuBLASLt epilogues that ran:.*' | head -1)
  [ -n "$ran" ] && echo "$ran" | tee -a "$log"
  ran=${ran:+; ${ran#cuBLASLt }}
  if [ -z "$total" ]; then result "no CUDA tests ran (rc $rc; see log.txt)"; return 1; fi
  if [ "${failed:-0}" != 0 ] || [ "$rc" != 0 ]; then result "${failed:-?} of $total failed: ${names:-see log.txt}$ran"; return 1; fi
  if [ "$skipped" != 0 ]; then result "$skipped of $total skipped: the tests found no usable GPU"; return 1; fi
  result "$total/$total passed$ran"
}

kernel_objects() { find "$BUILD" -path '*trainer_kernels.dir*' -name '*.cu.o' 2>/dev/null | sort; }
plan_resources() {
  show "cuobjdump --dump-resource-usage $BUILD/kernels/CMakeFiles/trainer_kernels.dir/cuda/*.cu.o > $WORK/resource_usage.txt"
  show "python3 $COMPARE resources $OUT/kernel_resources.tsv --ptxas $WORK/ptxas.txt $WORK/resource_usage.txt"
  echo "      (ptxas.txt: the build's -Xptxas=-v lines, which add spill stores/loads; names demangled with c++filt)"
}
step_resources() {
  local tool objs o raw="$WORK/resource_usage.txt" args=()
  mapfile -t objs < <(kernel_objects)
  [ ${#objs[@]} -gt 0 ] || { result "no CUDA objects under $BUILD (build failed or skipped)"; return 77; }
  if tool=$(find_tool cuobjdump); then
    : >"$raw"
    echo "+ $tool --dump-resource-usage on ${#objs[@]} objects -> $raw"
    for o in "${objs[@]}"; do
      "$tool" --dump-resource-usage "$o" >>"$raw" 2>&1 || { result "cuobjdump failed on $o"; return 1; }
    done
    args+=("$raw")
  else
    echo "cuobjdump not found: registers, shared memory and spills from the build's ptxas -v lines only"
  fi
  [ -s "$WORK/ptxas.txt" ] && args+=(--ptxas "$WORK/ptxas.txt")
  [ ${#args[@]} -gt 0 ] || { result "neither cuobjdump nor a build log with ptxas -v lines"; return 77; }
  verdict resources "$OUT/kernel_resources.tsv" "${args[@]}" || return $?
  awk -F'\t' '{ printf "%-9s %-12s %-11s %-11s %-17s %s\n", $2, $3, $4, $5, $6 "/" $7, substr($1, 1, 110) }' \
    "$OUT/kernel_resources.tsv"
  echo "(shared_bytes: static shared memory; the attention kernels also take dynamic shared memory at launch)"
}

make_text() {
  awk 'BEGIN { srand(7); split("the a whale sea ship captain white long of and to in was he it that his", w, " ");
         for (d = 0; d < 40; d++) { for (l = 0; l < 60; l++) { line = "";
           for (k = 0; k < 12; k++) line = line w[int(rand() * 17) + 1] " "; print line } print "\n\n\n" } }'
}
ensure_data() {
  compgen -G "$WORK/data/train_*.bin" >/dev/null && compgen -G "$WORK/data/val_*.bin" >/dev/null && return 0
  mkdir -p "$WORK/data"
  make_text >"$WORK/data/text.txt"
  x "$TRAINER" data prepare --input "$WORK/data/text.txt" --tokenizer byte --out "$WORK/data" --val-fraction 0.1 --quiet
}
plan_data() {
  show "awk (generated English-like text) > $WORK/data/text.txt"
  show "$TRAINER data prepare --input $WORK/data/text.txt --tokenizer byte --out $WORK/data --val-fraction 0.1 --quiet"
}
step_data() {
  need_trainer || return $?
  rm -rf "$WORK/data"
  ensure_data || { result "trainer data prepare failed"; return 1; }
  result "byte-level shards: $(du -b "$WORK"/data/train_*.bin | awk '{s += $1} END {print s}') B train, $(du -b "$WORK"/data/val_*.bin | awk '{s += $1} END {print s}') B val"
}

tiny_run() {  # tiny_run NAME DEVICE PRECISION [ARGS...]: one fresh run -> WORK/NAME.jsonl
  rm -f "$WORK/$1.jsonl"
  tiny_cmd "$@"
  x "${CMD[@]}"
}
tiny_launch() {  # tiny_launch NAME LAUNCHER... -- DEVICE PRECISION [ARGS...]
  local name="$1" launcher=()
  shift
  while [ "$1" != -- ]; do launcher+=("$1"); shift; done
  shift
  rm -f "$WORK/$name.jsonl"
  tiny_cmd "$name" "$@"
  x "${launcher[@]}" "${CMD[@]}"
}
ensure_run() {  # ensure_run NAME DEVICE PRECISION: reuse an earlier step's complete run
  [ -s "$WORK/$1.jsonl" ] && grep -q '"step": 20,' "$WORK/$1.jsonl" && return 0
  tiny_run "$@"
}
loss_table() {
  python3 "$COMPARE" table "$OUT/losses.tsv" cpu_fp32="$WORK/cpu_fp32.jsonl" cuda_fp32="$WORK/cuda_fp32.jsonl" \
    cuda_bf16="$WORK/cuda_bf16.jsonl" cuda_bf16_again="$WORK/cuda_bf16_again.jsonl" \
    data2_fp32="$WORK/data2_fp32.jsonl" tensor2_fp32="$WORK/tensor2_fp32.jsonl" \
    data2_zero1_fp32="$WORK/data2_zero1_fp32.jsonl" data2_zero1_bf16wire="$WORK/data2_zero1_bf16wire.jsonl" \
    tensor2_bf16="$WORK/tensor2_bf16.jsonl" pipeline2_fp32="$WORK/pipeline2_fp32.jsonl" \
    cuda_fp32_4layers="$WORK/cuda_fp32_4layers.jsonl" interleaved2_fp32="$WORK/interleaved2_fp32.jsonl" >/dev/null
}
plan_fp32() {
  tiny_cmd cpu_fp32 cpu fp32
  show "$(quote "${CMD[@]}")"
  echo "      (and the same with train.device=cuda -> cuda_fp32.jsonl)"
  show "python3 $COMPARE losses $WORK/cpu_fp32.jsonl $WORK/cuda_fp32.jsonl --rtol $TINY_RTOL"
}
step_fp32() {
  need_trainer || return $?
  ensure_data || { result "trainer data prepare failed"; return 1; }
  tiny_run cpu_fp32 cpu fp32 || { result "CPU fp32 run failed"; return 1; }
  tiny_run cuda_fp32 cuda fp32 || { result "CUDA fp32 run failed"; return 1; }
  loss_table
  verdict losses "$WORK/cpu_fp32.jsonl" "$WORK/cuda_fp32.jsonl" --rtol "$TINY_RTOL"
}
plan_bf16() {
  echo "      (the tiny run on cuda with train.precision=bf16 -> cuda_bf16.jsonl)"
  show "python3 $COMPARE bf16 $WORK/cuda_bf16.jsonl $WORK/cuda_fp32.jsonl --rtol $BF16_RTOL"
}
step_bf16() {
  need_trainer || return $?
  ensure_data || { result "trainer data prepare failed"; return 1; }
  ensure_run cuda_fp32 cuda fp32 || { result "CUDA fp32 run failed"; return 1; }
  tiny_run cuda_bf16 cuda bf16 || { result "CUDA bf16 run failed"; return 1; }
  loss_table
  verdict bf16 "$WORK/cuda_bf16.jsonl" "$WORK/cuda_fp32.jsonl" --rtol "$BF16_RTOL"
}
plan_determinism() {
  echo "      (the bf16 run again -> cuda_bf16_again.jsonl, and with --set train.graphs=step -> cuda_bf16_graphs.jsonl)"
  show "python3 $COMPARE identical $WORK/cuda_bf16.jsonl $WORK/cuda_bf16_again.jsonl"
  show "python3 $COMPARE identical $WORK/cuda_bf16.jsonl $WORK/cuda_bf16_graphs.jsonl"
}
step_determinism() {
  need_trainer || return $?
  ensure_data || { result "trainer data prepare failed"; return 1; }
  ensure_run cuda_bf16 cuda bf16 || { result "CUDA bf16 run failed"; return 1; }
  tiny_run cuda_bf16_again cuda bf16 || { result "second CUDA bf16 run failed"; return 1; }
  loss_table
  verdict identical "$WORK/cuda_bf16.jsonl" "$WORK/cuda_bf16_again.jsonl" || return $?
  local again
  again=$(head -n 1 "$STEP_RESULT")
  # Replayed CUDA graphs run the same kernels on the same buffers: the same bits.
  tiny_run cuda_bf16_graphs cuda bf16 --set train.graphs=step || { result "$again; train.graphs=step run failed"; return 1; }
  local v=0
  verdict identical "$WORK/cuda_bf16.jsonl" "$WORK/cuda_bf16_graphs.jsonl" || v=$?
  result "$again; with train.graphs=step: $(head -n 1 "$STEP_RESULT")"
  return "$v"
}

plan_multi_gpu() {
  mpi_cmd
  local m
  m=$(quote "${CMD[@]}")
  tiny_cmd data2_fp32 cuda fp32 --set parallel.data=2
  show "$m$(quote "${CMD[@]}")"
  echo "      (and --set parallel.tensor=2 -> tensor2_fp32.jsonl, --set parallel.data=2 --set parallel.zero=1 ->"
  echo "      data2_zero1_fp32.jsonl (ZeRO-1's in-place reduce-scatter over NCCL); each against cuda_fp32.jsonl to $TINY_RTOL;"
  echo "      and that with --set parallel.grad_reduce_dtype=bf16 -> data2_zero1_bf16wire.jsonl (the bf16 wire over"
  echo "      NCCL) to $WIRE_RTOL, not identical to the fp32 wire's; and tensor 2 in bf16 -> tensor2_bf16.jsonl against"
  echo "      cuda_bf16.jsonl to $BF16_RTOL; pipeline 2 (1f1b) -> pipeline2_fp32.jsonl against cuda_fp32.jsonl, and with"
  echo "      model.n_layer=4 one GPU -> cuda_fp32_4layers.jsonl and pipeline 2 interleaved over 2 virtual stages ->"
  echo "      interleaved2_fp32.jsonl against it, to $TINY_RTOL)"
}
step_multi_gpu() {
  [ "$NGPU" -ge 2 ] || { result "needs 2 GPUs ($NGPU found)"; return 77; }
  need_trainer || return $?
  command -v mpiexec >/dev/null || { result "mpiexec not found (OpenMPI: in the bundle)"; return 77; }
  ensure_data || { result "trainer data prepare failed"; return 1; }
  ensure_run cuda_fp32 cuda fp32 || { result "CUDA fp32 run failed"; return 1; }
  ensure_run cuda_bf16 cuda bf16 || { result "CUDA bf16 run failed"; return 1; }
  local fail=0 notes=() run name precision ref rtol keys key line sets
  mpi_cmd
  local launcher=("${CMD[@]}")
  # ZeRO-1 on NCCL leaves its parameter all-gathers in flight into the next forward
  # (GatherWait::on_first_use), so a stale weight read shows in its losses. The bf16 wire rounds
  # each reduced gradient: on the CPU (MPI, where ZeRO-1 all-reduces its buckets; NCCL
  # reduce-scatters them) the same run agrees with one process to 2.4e-5 to 6.1e-5, and it must
  # not be identical to the fp32 wire's, or bf16 was not used.
  # Tensor 2 in bf16 sums bf16 activations over NCCL and runs the vocabulary-parallel
  # cross-entropy in bf16; it is held to what bf16 is held to against fp32.
  # Pipeline 2 sends activations and gradients over NCCL's point-to-point calls; interleaved
  # (4 layers, a layer per virtual stage) adds the ring's wrap-around link, whose own
  # communicators keep NCCL's in-order streams from waiting in a cycle
  # (parallel/pipeline_links.h). On the CPU both agree with one process to 2e-7.
  tiny_run cuda_fp32_4layers cuda fp32 --set model.n_layer=4 || { notes+=("cuda_fp32_4layers: run failed"); fail=1; }
  # name (its metrics file and losses.tsv column), precision, reference run, rtol, recipe keys
  local runs=(
    "data2_fp32           fp32 cuda_fp32 $TINY_RTOL parallel.data=2"
    "tensor2_fp32         fp32 cuda_fp32 $TINY_RTOL parallel.tensor=2"
    "data2_zero1_fp32     fp32 cuda_fp32 $TINY_RTOL parallel.data=2 parallel.zero=1"
    "data2_zero1_bf16wire fp32 cuda_fp32 $WIRE_RTOL parallel.data=2 parallel.zero=1 parallel.grad_reduce_dtype=bf16"
    "tensor2_bf16         bf16 cuda_bf16 $BF16_RTOL parallel.tensor=2"
    "pipeline2_fp32       fp32 cuda_fp32 $TINY_RTOL parallel.pipeline=2"
    "interleaved2_fp32    fp32 cuda_fp32_4layers $TINY_RTOL model.n_layer=4 parallel.pipeline=2 parallel.schedule=interleaved parallel.virtual_stages=2"
  )
  for run in "${runs[@]}"; do
    read -r name precision ref rtol keys <<<"$run"
    sets=()
    for key in $keys; do sets+=(--set "$key"); done
    if ! tiny_launch "$name" "${launcher[@]}" -- cuda "$precision" "${sets[@]}"; then
      notes+=("$name: run failed")
      fail=1
      continue
    fi
    line=$(python3 "$COMPARE" losses "$WORK/$ref.jsonl" "$WORK/$name.jsonl" --rtol "$rtol") || fail=1
    if [ "$name" = data2_zero1_bf16wire ] &&
       python3 "$COMPARE" identical "$WORK/data2_zero1_fp32.jsonl" "$WORK/$name.jsonl" >/dev/null; then
      line="FAIL: identical to the fp32 wire's losses (bf16 not used); $line"
      fail=1
    fi
    echo "$name: $line"
    # The summary keeps each run's worst relative difference (its 400 characters hold all
    # eight), a failure's own text where there is one.
    if [ "${line#FAIL}" = "$line" ]; then
      notes+=("$name $(grep -oE 'worst rel [^ ]+' <<<"$line" | head -1 | sed 's/worst rel //')")
    else
      notes+=("$name FAIL ${line:6:100}")
    fi
  done
  loss_table
  result "worst relative difference from one GPU: $(IFS=';'; echo "${notes[*]}")"
  return "$fail"
}

cuda_cases() {  # cuda_cases FILTER...: how many test cases pass the doctest filters
  "$BUILD/tests/test_cuda" --list-test-cases "$@" 2>/dev/null |
    grep -oE 'test cases passing the current filters: [0-9]+' | grep -oE '[0-9]+$'
}
sanitize() {  # sanitize TOOL FILTER...: run under compute-sanitizer inside the step's budget
  local tool="$1"
  shift
  SANITIZER=$(find_tool compute-sanitizer) || { result "compute-sanitizer not found"; return 77; }
  [ -x "$BUILD/tests/test_cuda" ] || { result "no $BUILD/tests/test_cuda (build failed or skipped)"; return 77; }
  local log="$WORK/$tool.txt" box total rc
  box=$((STEP_BUDGET < STEP_CAP - 5 ? STEP_BUDGET : STEP_CAP - 5))
  total=$(cuda_cases "$@")
  sanitizer_cmd "$tool" "$@"
  echo "(time box ${box}s)"
  x timeout --kill-after=5 "$box" "${CMD[@]}" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  local ncase errors refused first
  ncase=$(grep -cE '^[0-9]+\.[0-9]+ s: ' "$log")
  errors=$(grep -oE 'ERROR SUMMARY: [0-9]+ error|\([0-9]+ errors?,' "$log" | grep -oE '[0-9]+' | tail -1)
  refused=$(grep -m1 -E '^=+ .*(Tool execution failed|not supported|first instrumented API call|Unable to|Could not)' "$log")
  first=$(grep -m1 -E '^========= +(Invalid|Race|Error|Program hit|Uninitialized|Leaked|Barrier|Malloc|Cuda|[A-Z][a-z]+ (read|write))' "$log" | cut -c1-150)
  local cases="$ncase of ${total:-?} cases"
  if [ -n "$refused" ] && [ "${errors:-0}" = 0 ]; then result "compute-sanitizer did not run here: ${refused:0:150}"; return 77; fi
  if [ "${errors:-0}" != 0 ]; then result "$errors errors in $cases (first: $first)"; return 1; fi
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    if [ -n "$first" ]; then result "errors before the ${box}s time box ($cases): $first"; return 1; fi
    result "incomplete: ${box}s time box reached after $cases, no errors so far"
    return 77
  fi
  if [ "$rc" = 77 ]; then result "test_cuda found no GPU under compute-sanitizer"; return 77; fi
  if [ -z "$errors" ]; then result "no sanitizer summary (rc $rc): $(last_line "$log")"; return 1; fi
  if [ "$rc" != 0 ]; then result "0 sanitizer errors, but test cases failed under $tool (rc $rc; see log.txt)"; return 1; fi
  local warn
  warn=$(grep -oE '[0-9]+ warnings?\)' "$log" | grep -oE '^[0-9]+' | tail -1)
  result "0 errors in $cases${warn:+, $warn warnings}"
}
plan_memcheck() { sanitizer_cmd memcheck '-tce=*nccl*'; show "timeout <budget> $(quote "${CMD[@]}")"; }
step_memcheck() { sanitize memcheck '-tce=*nccl*'; }
# Our kernels only: cuDNN's are not ours to race-check (memcheck keeps them: it catches a wrong
# stride of ours that makes cuDNN write out of bounds).
plan_racecheck() { sanitizer_cmd racecheck "-tc=$RACECHECK_CASES" '-tce=*cudnn*'; show "timeout <budget> $(quote "${CMD[@]}")"; }
step_racecheck() { sanitize racecheck "-tc=$RACECHECK_CASES" '-tce=*cudnn*'; }

fake_step() {  # GPU_CHECK_FAKE=1: the step's body is a sleep (see the header)
  local secs="${GPU_CHECK_FAKE_SLEEP:-0.1}"
  in_list "$1" "${GPU_CHECK_FAKE_SLOW:-}" && secs="${GPU_CHECK_FAKE_SLOW_S:-600}"
  echo "fake $1: sleep $secs"
  sleep "$secs"
  if in_list "$1" "${GPU_CHECK_FAKE_FAIL:-}"; then result "fake failure"; return 1; fi
  result "fake: slept ${secs}s"
}

