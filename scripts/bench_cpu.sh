#!/usr/bin/env bash
# bench_cpu.sh [RECIPE] [MICRO_BATCH] [SEQ_LEN]: the CPU training step of one process side by
# side with the PyTorch reference and with what OpenBLAS's sgemm allows, in one run.
# For each thread count (THREADS, default "1 2") it runs, one after the other on an otherwise idle
# machine:
#   - `trainer bench` of RECIPE (default configs/gpt2-124m.yaml) on the CPU, data 1, ZeRO 0,
#     micro-batch MICRO_BATCH x SEQ_LEN (default 4 x 64), generated tokens;
#   - scripts/reference/torch_bench.py on the same shape (Debian's python3-torch, fp32, same
#     step: forward, backward, clip, AdamW);
#   - OpenBLAS sgemm through numpy (its own threading) at two of the step's shapes, the MLP's
#     up-projection (M = MICRO_BATCH x SEQ_LEN, N = 4 x d_model or ffn_dim, K = d_model) and
#     the head (N = the padded vocabulary), the faster of the two rates bounding the step:
#     limit = sgemm FLOP/s / bench's FLOPs per token. (Either shape alone read 10-40% low in
#     some runs with 2 threads here.)
# and prints one row: both tokens/s, their ratio, the sgemm rate, the limit and the share of it
# reached. PROFILE=1 also prints `bench --profile`'s op table per thread count.
#
# Environment: TRAINER (default build/trainer), THREADS, STEPS (timed steps, default 5),
# WARMUP (default 2), PROFILE.
set -euo pipefail
cd "$(dirname "$0")/.."
trainer="${TRAINER:-build/trainer}"
recipe="${1:-configs/gpt2-124m.yaml}"
micro="${2:-4}"
seq="${3:-64}"
steps="${STEPS:-5}"
warmup="${WARMUP:-2}"
read -r -a threads <<<"${THREADS:-1 2}"
[[ -x "$trainer" ]] || { echo "bench_cpu.sh: no trainer at $trainer (set TRAINER)" >&2; exit 2; }
sets=(--set train.device=cpu --set parallel.data=1 --set parallel.tensor=1 --set parallel.pipeline=1
      --set parallel.zero=0 --set train.micro_batch="$micro" --set train.seq_len="$seq"
      --set train.global_batch="$micro")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$trainer" validate "$recipe" "${sets[@]}" >"$work/resolved.yaml"

printf '%7s %13s %13s %7s %14s %12s %9s\n' threads "trainer tok/s" "torch tok/s" ratio "sgemm GFLOP/s" "limit tok/s" "of limit"
for t in "${threads[@]}"; do
  export OMP_NUM_THREADS=$t OPENBLAS_NUM_THREADS=$t
  "$trainer" bench "$recipe" "${sets[@]}" --steps "$steps" --warmup "$warmup" --json 2>/dev/null |
    grep -E '^\{' | tail -1 >"$work/trainer.json"
  /usr/bin/python3 scripts/reference/torch_bench.py "$work/resolved.yaml" --threads "$t" --batch "$micro" \
    --seq "$seq" --steps "$steps" --warmup "$warmup" >"$work/torch.json"
  /usr/bin/python3 - "$work" "$t" "$micro" "$seq" <<'EOF'
import json, sys, time
import numpy as np
import yaml
sys.path.insert(0, "scripts/reference")
from torch_bench import padded_vocab
work, t, micro, seq = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
trainer = json.load(open(f"{work}/trainer.json"))
torch = json.load(open(f"{work}/torch.json"))
model = yaml.safe_load(open(f"{work}/resolved.yaml"))["model"]
C = model["d_model"]
V = padded_vocab(model)
F = model["ffn_dim"] if model["arch"] == "llama" else 4 * C
M = micro * seq
rng = np.random.default_rng(0)


def rate(N):
    """sgemm FLOP/s at (M, N, C): the fastest of 5 rounds of 10 products."""
    a = rng.standard_normal((M, C), dtype=np.float32)
    b = rng.standard_normal((C, N), dtype=np.float32)
    a @ b
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(10):
            a @ b
        best = min(best, (time.perf_counter() - start) / 10)
    return 2.0 * M * N * C / best


sgemm = max(rate(F), rate(V))
limit = sgemm / trainer["flops_per_token"]
ours, ref = trainer["tokens_per_s"], torch["tokens_per_s"]
print(f"{t:7d} {ours:13.1f} {ref:13.1f} {ours / ref:7.2f} {sgemm / 1e9:14.1f} {limit:12.1f} {ours / limit:8.0%}")
EOF
done
if [[ "${PROFILE:-0}" == 1 ]]; then
  for t in "${threads[@]}"; do
    echo "== trainer bench --profile, $t thread(s)"
    OMP_NUM_THREADS=$t OPENBLAS_NUM_THREADS=$t "$trainer" bench "$recipe" "${sets[@]}" --steps "$steps" \
      --warmup "$warmup" --profile 2>/dev/null | sed -n '/tokens\/s/p;/op profile/,$p'
  done
fi
