#!/usr/bin/env bash
# trainer bench --json prints one JSON object with the documented fields, on one process and
# under mpiexec with a pipeline (bubble) and data parallelism (communication); the device's own
# name, peak kind and memory; and with --profile a per-op table whose rows name the model's ops,
# add up to no more than the step and carry their bytes and FLOPs (text report and JSON), and,
# with a memory bandwidth (none is known for a CPU; --bandwidth sets one), each row's roofline
# floor max(bytes / bandwidth, FLOPs / peak) and the ops furthest above theirs.
source "$(dirname "$0")/lib.sh"
check() {  # json expected_world [profiled]
  /usr/bin/python3 - "$@" <<'PY' || fail "bad bench JSON: $1"
import json, sys
d = json.loads(sys.argv[1])
need = ["tokens_per_s", "tokens_per_s_per_rank", "mfu", "step_s", "forward_s", "backward_s", "forward_backward_s", "optimizer_s",
        "comm_s", "bubble_s", "peak_memory_bytes", "planned_memory_bytes", "world", "data", "tensor", "pipeline",
        "zero", "schedule", "micro_batch", "global_batch", "seq_len", "device", "precision", "flops_per_token",
        "peak_flops_per_rank", "device_name", "peak_kind", "device_memory_used_bytes", "device_memory_total_bytes",
        "profile", "virtual_stages", "bubble_fraction", "bubble_fraction_model", "startup_s", "init_params_s",
        "memory_bandwidth_bytes_per_s", "roofline"]
missing = [k for k in need if k not in d]
assert not missing, missing
assert d["world"] == int(sys.argv[2]), d["world"]
assert d["tokens_per_s"] > 0 and 0 < d["mfu"] < 1, d
assert abs(d["tokens_per_s_per_rank"] * d["world"] - d["tokens_per_s"]) < 1e-5 * d["tokens_per_s"]
assert d["forward_s"] > 0 and d["backward_s"] > 0 and d["step_s"] >= d["forward_s"], d
# Their sum, each rank's own (the slowest rank's; one rank here or ranks of similar passes).
# (6 printed digits each: a relative 1e-5 of slack.)
assert (d["forward_s"] + d["backward_s"]) * (1 + 1e-5) >= d["forward_backward_s"] > 0, d
assert d["forward_backward_s"] * (1 + 1e-5) >= max(d["forward_s"], d["backward_s"]), d
assert d["graphs"] is None, d["graphs"]
assert d["peak_memory_bytes"] > d["planned_memory_bytes"] > 0, d
assert abs(d["tokens_per_s"] * d["step_s"] - d["global_batch"] * d["seq_len"]) < 1e-3 * d["global_batch"] * d["seq_len"]
assert d["device_name"] and d["peak_kind"].startswith("cpu fp32"), d
assert 0 < d["device_memory_used_bytes"] < d["device_memory_total_bytes"], d
assert 0 < d["init_params_s"] <= d["startup_s"], d
prof = d["profile"]
if len(sys.argv) > 3:
    ops = {r["op"] for r in prof}
    for op in ("encoder_forward", "layernorm_forward", "matmul+bias", "attention_forward", "attention_backward",
               "matmul+dgelu+dbias", "matmul+dbias_a", "layernorm_backward", "adamw_many"):
        assert op in ops, (op, sorted(ops))
    # The head's cross-entropy: fused with the whole vocabulary on a rank, in passes when split.
    assert ("xent_fused" in ops) != ("xent_backward" in ops), sorted(ops)
    total = sum(r["seconds_per_step"] for r in prof)
    assert 0 < total <= d["step_s"] * 1.01, (total, d["step_s"])
    assert all(r["calls_per_step"] > 0 and r["shape"] for r in prof), prof
    # What each row moves and computes at least: bytes for every op, FLOPs for the products.
    assert all(r["bytes_per_step"] > 0 for r in prof), prof
    assert all(r["flops_per_step"] > 0 for r in prof if r["op"].startswith(("matmul", "attention_"))), prof
    assert all(r["flops_per_step"] == 0 for r in prof if r["op"] in ("layernorm_backward", "adamw_many")), prof
    assert "gelu_backward" not in ops, sorted(ops)
    # No bandwidth is known for a CPU: no floors. With --bandwidth (GB/s, the 4th argument)
    # every row's floor is the larger of its two terms at that bandwidth and the CPU's peak.
    bw = float(sys.argv[4]) * 1e9 if len(sys.argv) > 4 else None
    assert d["memory_bandwidth_bytes_per_s"] == bw, (d["memory_bandwidth_bytes_per_s"], bw)
    # The figures the floors used, and where each came from.
    if bw is None:
        assert d["roofline"] is None, d["roofline"]
    else:
        assert d["roofline"].startswith(f"{bw / 1e9:g} GB/s (--bandwidth) and "), d["roofline"]
        assert d["roofline"].endswith(" TFLOP/s (the CPU estimate, 0.25 per thread)"), d["roofline"]
    for r in prof:
        if bw is None:
            assert r["floor_seconds_per_step"] is None, r
            continue
        want = max(r["bytes_per_step"] / bw, r["flops_per_step"] / d["peak_flops_per_rank"])
        assert abs(r["floor_seconds_per_step"] - want) <= 1e-5 * want, (r, want)
else:
    assert prof is None, prof
PY
}
out=$("$trainer" bench configs/debug/layouts.yaml --steps 2 --warmup 1 --json) || fail "bench: $out"
[[ $(echo "$out" | wc -l) == 1 ]] || fail "more than one line: $out"
check "$out" 1
out=$("${MPIEXEC[@]}" -n 4 "$trainer" bench configs/debug/layouts.yaml $(layout_args 2 1 2 1) --steps 2 --warmup 1 --json) \
  || fail "bench 4 ranks: $out"
check "$out" 4
/usr/bin/python3 -c "import json,sys; d=json.loads(sys.argv[1]); assert d['pipeline']==2 and d['bubble_s']>=0 and d['comm_s']>0
# 2 stages, 4 micro-batches per data rank: the model's idle fraction 1/5.
assert abs(d['bubble_fraction_model'] - 1 / 5) < 1e-6 and 0 <= d['bubble_fraction'] < 1, d" "$out" \
  || fail "4-rank fields: $out"
out=$("${MPIEXEC[@]}" -n 2 "$trainer" bench configs/debug/layouts.yaml $(layout_args 1 1 2 0) --steps 2 --warmup 1 --json \
  --set parallel.schedule=interleaved --set parallel.virtual_stages=2) || fail "bench interleaved: $out"
check "$out" 2
/usr/bin/python3 -c "import json,sys; d=json.loads(sys.argv[1])
# 2 stages x 2 virtual stages, 8 micro-batches: 1/17.
assert d['schedule'] == 'interleaved' and d['virtual_stages'] == 2 and abs(d['bubble_fraction_model'] - 1 / 17) < 1e-6, d" \
  "$out" || fail "interleaved fields: $out"
out=$("$trainer" bench configs/debug/layouts.yaml --steps 2 --warmup 1 --json --profile) || fail "bench --profile: $out"
check "$out" 1 profiled
out=$("$trainer" bench configs/debug/layouts.yaml --steps 2 --warmup 1 --json --profile --bandwidth 20) \
  || fail "bench --profile --bandwidth: $out"
check "$out" 1 profiled 20
out=$("${MPIEXEC[@]}" -n 2 "$trainer" bench configs/debug/layouts.yaml $(layout_args 1 2 1 1) --steps 2 --warmup 1 --json --profile) \
  || fail "bench --profile 2 ranks: $out"
check "$out" 2 profiled
text=$("$trainer" bench configs/debug/layouts.yaml --steps 2 --warmup 1 --profile) || fail "bench --profile text: $text"
grep -q "op profile (rank 0, per step" <<<"$text" || fail "no op table: $text"
# ms/step, %step, calls, us/call, GB/s, TFLOP/s (a number: attention computes), %roof ("-": no
# bandwidth is known for a CPU), op, shape.
grep -Eq "^ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +- +attention_forward +\(" <<<"$text" || fail "no attention row: $text"
grep -Eq "^ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +- +- +layernorm_backward +\(" <<<"$text" || fail "no layernorm_backward row without FLOPs: $text"
grep -q "^  no roofline: no memory bandwidth is known for .*(--bandwidth GB/s sets one)" <<<"$text" || fail "no roofline note: $text"
# One process, no sequence parallelism: every bias gradient rides on a product.
! grep -q " bias_backward " <<<"$text" || fail "a bias_backward row is left: $text"
grep -q "MFU [0-9.]*% of .* TFLOP/s cpu fp32" <<<"$text" || fail "MFU line does not name the peak: $text"
text=$("$trainer" bench configs/debug/layouts.yaml --steps 2 --warmup 1 --profile --bandwidth 20) || fail "bench --bandwidth text: $text"
grep -Eq "^ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9]+ +attention_forward +\(" <<<"$text" || fail "no %roof: $text"
grep -Eq "^  roofline 20 GB/s \(--bandwidth\) and [0-9.]+ TFLOP/s \(the CPU estimate, 0.25 per thread\): the ops' floors [0-9.]+ ms of their [0-9.]+ ms per step \([0-9]+%\); furthest above theirs: [a-z_+]+ .* \+[0-9.]+ ms, .* \+[0-9.]+ ms, .* \+[0-9.]+ ms$" <<<"$text" \
  || fail "no roofline line: $text"
# A bandwidth must be a positive number and belongs to --profile: exit 2 naming it.
expect_exit2 "--bandwidth 0: the device memory bandwidth must be > 0 GB/s" \
  "$trainer" bench configs/debug/layouts.yaml --steps 1 --warmup 0 --profile --bandwidth 0
expect_exit2 "--bandwidth -3: the device memory bandwidth must be > 0 GB/s" \
  "$trainer" bench configs/debug/layouts.yaml --steps 1 --warmup 0 --profile --bandwidth -3
expect_exit2 "--bandwidth 20: it sets the roofline of --profile's table; add --profile" \
  "$trainer" bench configs/debug/layouts.yaml --steps 1 --warmup 0 --bandwidth 20
# --ceilings measured has no figures for a CPU: exit 2 before any step, never the data sheet's.
expect_exit2 "--ceilings measured: no measured memory bandwidth is on record for" \
  "$trainer" bench configs/debug/layouts.yaml --steps 1 --warmup 0 --profile --ceilings measured
expect_exit2 "--ceilings roofline: valid: datasheet, measured" \
  "$trainer" bench configs/debug/layouts.yaml --steps 1 --warmup 0 --profile --ceilings roofline
expect_exit2 "--ceilings measured: it sets the roofline of --profile's table; add --profile" \
  "$trainer" bench configs/debug/layouts.yaml --steps 1 --warmup 0 --ceilings measured
echo "PASS: $out"
