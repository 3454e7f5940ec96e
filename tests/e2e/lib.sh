# Shared helpers for the end-to-end tests (sourced). Each test gets a scratch directory and
# a small byte-level dataset made by `trainer data prepare` from generated text.
set -euo pipefail
trainer="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# expect_exit2 NEEDLE COMMAND...: the command exits 2 and its output holds NEEDLE.
expect_exit2() {
  local needle="$1"; shift
  local rc=0 msg
  msg="$("$@" 2>&1)" || rc=$?
  [[ $rc -eq 2 ]] || fail "exit $rc (want 2) from: $* -> $msg"
  grep -qF -- "$needle" <<<"$msg" || fail "'$needle' not in: $msg"
  echo "ok (exit 2): $msg"
}

# make_byte_data DIR: deterministic English-like text -> byte-level train/val shards in DIR.
make_byte_data() {
  local dir="$1"
  mkdir -p "$dir"
  awk 'BEGIN { srand(7); split("the a whale sea ship captain white long of and to in was he it that his", w, " ");
         for (d = 0; d < 40; d++) { for (l = 0; l < 60; l++) { line = "";
           for (k = 0; k < 12; k++) line = line w[int(rand() * 17) + 1] " "; print line } print "\n\n\n" } }' \
    > "$dir/text.txt"
  "$trainer" data prepare --input "$dir/text.txt" --tokenizer byte --out "$dir" --val-fraction 0.1 --quiet >/dev/null
}

# Files outside the scratch directory must not change: mark_outside records the time, and
# expect_outside_unchanged fails naming any file of the source tree (the tests' working
# directory; build folders, .git and Python's byte-code caches aside) written since.
mark_outside() { touch "$work/.outside_mark"; }
expect_outside_unchanged() {
  local src changed
  src=$(pwd)
  changed=$(find "$src" \( -path "$src/build*" -o -path "$src/.git" -o -name __pycache__ \) -prune -o \
    -newer "$work/.outside_mark" -print)
  [[ -z "$changed" ]] || fail "files outside the test's scratch directory changed: $changed"
}

# losses FILE: "step loss" lines of the train records of a metrics file (bad-step event records aside).
losses() { grep '"loss"' "$1" | grep -v '"event"' | sed -E 's/.*"step": ([0-9]+).*"loss": ([^,}]+).*/\1 \2/'; }

MPIEXEC=(mpiexec --allow-run-as-root --oversubscribe -x OMP_NUM_THREADS=1 -x OMP_WAIT_POLICY=passive
         -x OPENBLAS_NUM_THREADS=1)
# layout_args D T P Z: --set arguments for a parallel layout.
layout_args() {
  echo --set parallel.data=$1 --set parallel.tensor=$2 --set parallel.pipeline=$3 --set parallel.zero=$4
}
# same_losses A B TOL: the "step loss" lines of A and B agree to TOL relative.
same_losses() {
  paste <(echo "$1") <(echo "$2") | awk -v tol="$3" '
    function finite(x) { return x ~ /^[-+]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][-+]?[0-9]+)?$/ }
    { if ($1 != $3) { print "step mismatch: " $0; bad = 1; next }
      # A NaN, an infinity or null agrees with nothing (awk would compare it as equal or 0).
      if (!finite($2) || !finite($4)) { print "loss not finite at step " $1 ": " $2 " vs " $4; bad = 1; next }
      d = $2 - $4; if (d < 0) d = -d; r = $4 < 0 ? -$4 : $4;
      if (d > tol * r) { print "loss differs at step " $1 ": " $2 " vs " $4; bad = 1 } }
    END { exit bad }'
}

# expect_refusals SECONDS ROW...: each ROW is "REGEX|ARGS" (ARGS split on spaces). The trainer,
# run with ARGS and no input, must exit 2 within SECONDS (124 means it hung) with output that
# matches the extended REGEX and holds no 40-digit number, std::bad_alloc, crash or "fatal".
# Sets refusals to the rows checked.
expect_refusals() {
  local limit="$1" row want rc
  shift
  refusals=0
  for row in "$@"; do
    want="${row%%|*}"
    read -r -a args <<< "${row#*|}"
    rc=0
    timeout "$limit" "$trainer" "${args[@]}" > "$work/refusal.log" 2>&1 < /dev/null || rc=$?
    [[ $rc != 124 ]] || fail "'${row#*|}': hung"
    [[ $rc == 2 ]] || fail "'${row#*|}': exit code $rc, want 2: $(cat "$work/refusal.log")"
    grep -Eq -- "$want" "$work/refusal.log" || fail "'${row#*|}': want /$want/, got: $(cat "$work/refusal.log")"
    ! grep -q "[0-9]\{40\}" "$work/refusal.log" || fail "'${row#*|}': a huge number in: $(cat "$work/refusal.log")"
    ! grep -Eq "bad_alloc|Segmentation fault|core dumped|^fatal" "$work/refusal.log" ||
      fail "'${row#*|}': not a clean refusal: $(cat "$work/refusal.log")"
    refusals=$((refusals + 1))
  done
}
