#!/usr/bin/env bash
# run_each_case.sh BINARY: runs each doctest case of BINARY in a process of its own (as
# doctest_discover_tests' tests do; cases that initialize MPI cannot share one), under the
# caller's environment; exits 1 if any case fails or none is listed, and ends with a count.
set -u
bin="$1"
mapfile -t cases < <("$bin" --list-test-cases --no-intro=true 2>/dev/null | grep -v '^=\{5,\}$' | grep -v '^\[doctest\]')
[ "${#cases[@]}" -gt 0 ] || { echo "run_each_case.sh: $bin lists no test case"; exit 1; }
passed=0 failed=0
for c in "${cases[@]}"; do
  if "$bin" "--test-case=$c" >"${TMPDIR:-/tmp}/run_each_case.$$" 2>&1; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAILED: $c"
    cat "${TMPDIR:-/tmp}/run_each_case.$$"
  fi
done
rm -f "${TMPDIR:-/tmp}/run_each_case.$$"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
