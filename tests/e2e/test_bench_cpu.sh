#!/usr/bin/env bash
# scripts/bench_cpu.sh prints, for a GPT-2 and a Llama debug model, a header and one row per
# thread count whose figures hang together: positive tokens/s for the trainer and the PyTorch
# reference, their ratio, the sgemm rate, the limit and the share of it. No speed is asserted.
# Skipped (77) where Debian's python3-torch or python3-yaml is missing.
source "$(dirname "$0")/lib.sh"
py=/usr/bin/python3
$py -c "import torch, yaml" 2>/dev/null || { echo "SKIP: no python3-torch or python3-yaml"; exit 77; }
export OMP_WAIT_POLICY=passive
for recipe in configs/debug/tiny.yaml configs/debug/tiny-llama.yaml; do
  out=$(TRAINER="$trainer" THREADS="1 2" STEPS=1 WARMUP=1 scripts/bench_cpu.sh "$recipe" 2 16 2>&1) ||
    fail "$recipe: $out"
  echo "$out"
  [[ $(head -1 <<<"$out") == *"trainer tok/s"*"torch tok/s"*"limit tok/s"* ]] || fail "$recipe: no header in: $out"
  rows=$(tail -n +2 <<<"$out")
  [[ $(wc -l <<<"$rows") -eq 2 ]] || fail "$recipe: want 2 rows, got: $rows"
  $py - "$rows" <<'PY' || fail "$recipe: rows do not add up: $rows"
import sys
for n, line in enumerate(sys.argv[1].splitlines()):
    threads, ours, ref, ratio, sgemm, limit, share = line.split()
    assert int(threads) == n + 1, line
    ours, ref, ratio, sgemm, limit = map(float, (ours, ref, ratio, sgemm, limit))
    assert ours > 0 and ref > 0 and sgemm > 0 and limit > 0, line
    assert abs(ratio - ours / ref) <= 0.01 + 0.005 * ratio, line
    assert share.endswith("%") and abs(float(share[:-1]) - 100 * ours / limit) <= 1, line
PY
done
echo "bench_cpu.sh: rows for gpt2 and llama"
