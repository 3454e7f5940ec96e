#!/usr/bin/env bash
# fuzz.sh: build the libFuzzer harnesses (fuzz/, in the clang ASan + UBSan build build-asan/,
# see setup.sh's TRAINER_ASAN) and run each for SECONDS (default 600). Prints one summary line
# per harness and exits 1 when any found something.
#   usage: scripts/fuzz.sh [SECONDS] [HARNESS...]     (default: every fuzz/fuzz_*.cpp)
#   FUZZ_JOBS=N       harnesses run at once (default 1)
#   FUZZ_MALLOC_MB=M  one allocation above M MiB is a finding (default 1024); the process
#                     limit is -rss_limit_mb=2048, one input may take 10 s (-timeout)
#   BUILD_DIR=dir     the build (default build-asan)
#   FUZZ_BUILD=0      reuse the harnesses already built there (default 1: build first)
# Each harness's corpus grows in BUILD_DIR/fuzz/corpus/NAME, started from fuzz/corpus/NAME/
# (committed seeds), fuzz/seeds.py's generated seeds and, for the recipe harness, configs/.
# Findings (crash-*, leak-*, timeout-*, oom-* inputs) go to BUILD_DIR/fuzz/findings/NAME/;
# reproduce one with BUILD_DIR/fuzz/fuzz_NAME FILE. Logs: BUILD_DIR/fuzz/logs/NAME.log.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
[[ "$seconds" =~ ^[0-9]+$ && "$seconds" -gt 0 ]] || { echo "fuzz.sh: SECONDS must be a positive integer, got '$seconds'" >&2; exit 2; }
shift $(($# > 0 ? 1 : 0))
BUILD_DIR=${BUILD_DIR:-build-asan}
jobs=${FUZZ_JOBS:-1}
malloc_mb=${FUZZ_MALLOC_MB:-1024}

harnesses=("$@")
if ((${#harnesses[@]} == 0)); then
  for src in fuzz/fuzz_*.cpp; do harnesses+=("$(basename "$src" .cpp | sed 's/^fuzz_//')"); done
fi
out="$BUILD_DIR/fuzz"
if [[ "${FUZZ_BUILD:-1}" != 0 ]]; then
  # Only the harnesses (and the libraries they link), not the tests. clang's warnings stay in
  # the log; a failed build prints its end.
  mkdir -p "$out/logs"
  if ! BUILD_DIR=$BUILD_DIR TRAINER_ASAN=1 BUILD_TARGETS="${harnesses[*]/#/fuzz_}" scripts/setup.sh \
      >"$out/logs/build.log" 2>&1; then
    tail -40 "$out/logs/build.log"
    echo "fuzz.sh: the build failed (log: $out/logs/build.log)" >&2
    exit 1
  fi
fi
seeds="$out/seeds"
rm -rf "$seeds"
python3 fuzz/seeds.py "$seeds"

dict_of() {
  case "$1" in
    recipe) echo fuzz/dict/recipe.dict ;;
    set_value) echo fuzz/dict/set_value.dict ;;
    manifest) echo fuzz/dict/manifest.dict ;;
    json_int_map|gpt2_vocab|hf_index) echo fuzz/dict/json.dict ;;
    safetensors_header) echo fuzz/dict/safetensors.dict ;;
    hf_config) echo fuzz/dict/hf_config.dict ;;
    hf_tokenizer) echo fuzz/dict/hf_tokenizer.dict ;;
  esac
}

# Seeds the corpus, runs one harness, writes its summary line to logs/NAME.summary.
run_one() {
  local name=$1 exe="$out/fuzz_$1"
  local corpus="$out/corpus/$name" findings="$out/findings/$name" log="$out/logs/$name.log"
  mkdir -p "$corpus" "$findings" "$out/logs"
  [[ -d "fuzz/corpus/$name" ]] && cp -n "fuzz/corpus/$name"/* "$corpus"/
  [[ -d "$seeds/$name" ]] && cp -n "$seeds/$name"/* "$corpus"/
  [[ "$name" == recipe ]] && cp -n configs/*.yaml configs/debug/*.yaml "$corpus"/
  local args=(-max_total_time="$seconds" -rss_limit_mb=2048 -malloc_limit_mb="$malloc_mb"
              -timeout=10 -print_final_stats=1 -artifact_prefix="$findings/")
  local dict
  dict=$(dict_of "$name")
  [[ -n "$dict" ]] && args+=(-dict="$dict")
  local rc=0
  "$exe" "${args[@]}" "$corpus" >"$log" 2>&1 || rc=$?
  local runs eps cov ft found
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  found=$(find "$findings" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
  ((rc != 0 && found == 0)) && found=1  # died without leaving an input: still a finding
  printf 'fuzz %-13s runs %10s  exec/s %6s  cov %5s  ft %6s  corpus %5s  findings %s%s\n' \
    "$name" "${runs:-?}" "${eps:-?}" "${cov:-?}" "${ft:-?}" "$(find "$corpus" -type f | wc -l)" "$found" \
    "$( ((found)) && echo " -> $findings (log $log)")" >"$out/logs/$name.summary"
}

echo "fuzz: ${#harnesses[@]} harnesses, ${seconds}s each, $jobs at a time (logs in $out/logs)"
for name in "${harnesses[@]}"; do
  [[ -x "$out/fuzz_$name" ]] || { echo "fuzz.sh: no harness $out/fuzz_$name" >&2; exit 2; }
  rm -f "$out/logs/$name.summary"
  while (($(jobs -rp | wc -l) >= jobs)); do wait -n || true; done
  run_one "$name" &
done
wait
status=0
for name in "${harnesses[@]}"; do
  if [[ -f "$out/logs/$name.summary" ]]; then
    cat "$out/logs/$name.summary"
    grep -q 'findings 0$' "$out/logs/$name.summary" || status=1
  else
    echo "fuzz $name: no summary (see $out/logs/$name.log)"
    status=1
  fi
done
exit $status
