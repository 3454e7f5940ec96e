#!/usr/bin/env bash
# scripts/sweep.sh with the real `trainer bench` under mpiexec on 4 ranks (the debug recipe):
# data, tensor and pipeline layouts run and report their measurements; a layout the trainer
# rejects becomes an "invalid" row with the trainer's message; the CSV and the PNG are written.
source "$(dirname "$0")/lib.sh"
export TRAINER="$trainer" SWEEP_BENCH_ARGS="--steps 2 --warmup 1" SWEEP_TIMEOUT=120
SWEEP_OUT="$work/sweep" scripts/sweep.sh configs/debug/layouts.yaml 4 \
  "4x1x1:1:2:1f1b,2x2x1:2:2:1f1b,1x2x2:0:2:gpipe,1x1x4:0:4:1f1b,1x1x4:3:2:1f1b" >"$work/out.txt" \
  || fail "sweep exited $?: $(cat "$work/out.txt")"
cat "$work/out.txt"
head -c 8 "$work/sweep/sweep.png" | od -An -c | grep -q 'P   N   G' || fail "no PNG chart"
/usr/bin/python3 - "$work/sweep/sweep.csv" <<'PY' || fail "CSV: $(cat "$work/sweep/sweep.csv")"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 5, rows
for r in rows[:4]:
    assert r["status"] == "ok", (r["layout"], r["status"], r["reason"])
    assert float(r["tokens_per_s"]) > 0 and 0 < float(r["mfu"]) < 1, r
    assert float(r["step_s"]) > 0 and float(r["peak_memory_bytes"]) > 0, r
    assert float(r["plan_step_s"]) > 0 and int(r["plan_memory_bytes"]) > 0, r
assert float(rows[2]["bubble_s"]) >= 0 and float(rows[1]["comm_s"]) > 0, rows[1:3]
bad = rows[4]
assert bad["status"] == "invalid" and "zero: 3 with pipeline > 1" in bad["reason"], bad
PY
echo PASS
