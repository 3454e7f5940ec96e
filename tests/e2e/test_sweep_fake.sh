#!/usr/bin/env bash
# scripts/sweep.sh with a stand-in for `trainer bench` (TRAINER_BENCH_CMD) and a one-process
# launcher: every valid layout of 4 ranks that `trainer plan --search` lists for the debug
# recipe becomes exactly one CSV row; the stand-in's failures (invalid, out of memory, crash,
# timeout, no JSON) become rows with those statuses and the sweep goes on; successful rows carry
# the stand-in's numbers; the PNG chart is written. Then a given layout list with a malformed
# entry, and layouts that the plan says do not fit (skipped).
source "$(dirname "$0")/lib.sh"
recipe=configs/debug/layouts.yaml

fake="$work/fake_bench.sh"
cat >"$fake" <<'EOF'
#!/usr/bin/env bash
# Stand-in for `trainer bench RECIPE --json --set k=v ...`: numbers from the layout; some
# layouts fail on purpose.
d=1 t=1 p=1 z=0 mb=0 s=1f1b v=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --set) case "$2" in
             parallel.data=*) d=${2#*=} ;; parallel.tensor=*) t=${2#*=} ;; parallel.pipeline=*) p=${2#*=} ;;
             parallel.zero=*) z=${2#*=} ;; train.micro_batch=*) mb=${2#*=} ;; parallel.schedule=*) s=${2#*=} ;;
             parallel.virtual_stages=*) v=${2#*=} ;;
           esac; shift 2 ;;
    *) shift ;;
  esac
done
[[ $t == 4 ]] && { echo "error: fake: tensor 4 rejected; valid: 1 or 2" >&2; exit 2; }
chunked=no; [[ $v -gt 1 ]] && chunked=yes
[[ ($s == interleaved && $chunked == no) || ($s != interleaved && $chunked == yes) ]] &&
  { echo "error: fake: schedule $s with $v virtual stages" >&2; exit 2; }
[[ $d == 4 && $z == 3 ]] && { echo "fatal (rank 0): CPU backend: cannot allocate 99 bytes" >&2; exit 1; }
[[ $d == 2 && $z == 2 && $mb == 1 ]] && { echo "fatal (rank 1): boom" >&2; exit 1; }
[[ $p == 4 && $s == gpipe && $mb == 8 ]] && { sleep 30; exit 0; }
[[ $t == 2 && $p == 2 && $mb == 16 ]] && { echo "nothing to report"; exit 0; }
echo "bench: warming up"
printf '{"tokens_per_s": %d, "tokens_per_s_per_rank": %d, "mfu": 0.25, "step_s": 0.5, "forward_s": 0.1, ' \
  $((1000 * d + 100 * t + 10 * p + z)) $(((1000 * d + 100 * t + 10 * p + z) / 4))
printf '"backward_s": 0.2, "optimizer_s": 0.05, "comm_s": 0.1, "bubble_s": 0.05, "peak_memory_bytes": %d}\n' $((mb * 1000))
EOF
chmod +x "$fake"

export TRAINER="$trainer" TRAINER_BENCH_CMD="$fake" SWEEP_LAUNCHER=env SWEEP_TIMEOUT=2
SWEEP_OUT="$work/all" scripts/sweep.sh "$recipe" 4 >"$work/all.txt" || fail "sweep exited $?: $(cat "$work/all.txt")"
cat "$work/all.txt"
csv="$work/all/sweep.csv"
[[ -f "$csv" ]] || fail "no CSV"
head -c 8 "$work/all/sweep.png" | od -An -c | grep -q 'P   N   G' || fail "no PNG chart"

"$trainer" plan "$recipe" --world 4 --search --json >"$work/plan.json" || fail "plan --search"
/usr/bin/python3 - "$csv" "$work/plan.json" <<'PY' || fail "CSV content"
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
plan = json.load(open(sys.argv[2]))
def sched(l):
    return l["schedule"] + (str(l["virtual_stages"]) if l["virtual_stages"] > 1 else "")
want = {f'{l["data"]}x{l["tensor"]}x{l["pipeline"]}:{l["zero"]}:{l["micro_batch"]}:{sched(l)}'
        for l in plan["layouts"] if l["recompute"] == plan["recipe_recompute"]}
got = [r["layout"] for r in rows]
assert len(got) == len(set(got)), "duplicate rows"
assert set(got) == want, (sorted(set(got) ^ want))
by = {r["layout"]: r for r in rows}
def status(key, expect, reason_part=""):
    r = by[key]
    assert r["status"] == expect, (key, r["status"], r["reason"])
    assert reason_part in r["reason"], (key, r["reason"])
status("1x4x1:0:4:1f1b", "invalid", "tensor 4 rejected")
status("4x1x1:3:2:1f1b", "oom", "cannot allocate")
status("2x1x2:2:1:1f1b", "crash", "boom")
status("1x1x4:0:8:gpipe", "timeout", "after 2 s")
status("1x2x2:0:16:1f1b", "no_result")
ok = by["2x2x1:1:2:1f1b"]
assert ok["status"] == "ok" and ok["reason"] == "", ok
assert float(ok["tokens_per_s"]) == 2211 and float(ok["tokens_per_s_per_rank"]) == 552, ok
assert float(ok["peak_memory_bytes"]) == 2000 and float(ok["bubble_s"]) == 0.05, ok
# A field the bench JSON lacks (this stand-in prints no forward_backward_s) is an empty cell.
assert float(ok["forward_s"]) == 0.1 and ok["forward_backward_s"] == "" and float(ok["optimizer_s"]) == 0.05, ok
assert float(ok["plan_step_s"]) > 0 and int(ok["plan_memory_bytes"]) > 0, ok
assert (ok["data"], ok["tensor"], ok["pipeline"], ok["zero"], ok["micro_batch"], ok["schedule"]) == \
    ("2", "2", "1", "1", "2", "1f1b"), ok
# Interleaved layouts run with their virtual stages (the stand-in refuses them otherwise).
il = by["1x1x4:0:2:interleaved2"] if "1x1x4:0:2:interleaved2" in by else by["2x1x2:0:2:interleaved2"]
assert il["status"] == "ok" and il["schedule"] == "interleaved2", il
statuses = {r["status"] for r in rows}
assert statuses == {"ok", "invalid", "oom", "crash", "timeout", "no_result"}, statuses
print(f"{len(rows)} rows, statuses {sorted(statuses)}")
PY

# A given list: a malformed entry is a row, the rest run; layouts that do not fit are skipped.
SWEEP_OUT="$work/list" scripts/sweep.sh "$recipe" 4 "2x2x1:1:2:1f1b, 4x1x1:0:bad:1f1b,1x1x4:0:4:1f1b" \
  >"$work/list.txt" || fail "sweep with a list: $(cat "$work/list.txt")"
/usr/bin/python3 - "$work/list/sweep.csv" <<'PY' || fail "list CSV"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [r["layout"] for r in rows] == ["2x2x1:1:2:1f1b", "4x1x1:0:bad:1f1b", "1x1x4:0:4:1f1b"], rows
assert [r["status"] for r in rows] == ["ok", "invalid", "ok"], [(r["layout"], r["status"]) for r in rows]
assert "malformed layout" in rows[1]["reason"], rows[1]
PY
SWEEP_MEMORY=0.001 SWEEP_OUT="$work/small" scripts/sweep.sh "$recipe" 4 "2x2x1:1:2:1f1b" >"$work/small.txt" \
  || fail "sweep with little memory: $(cat "$work/small.txt")"
grep -q ',skipped,"out of memory by the plan' "$work/small/sweep.csv" || fail "unfit layout not skipped: $(cat "$work/small/sweep.csv")"
SWEEP_RUN_UNFIT=1 SWEEP_MEMORY=0.001 SWEEP_OUT="$work/small" scripts/sweep.sh "$recipe" 4 "2x2x1:1:2:1f1b" >/dev/null \
  || fail "sweep running unfit layouts"
grep -q ',ok,' "$work/small/sweep.csv" || fail "SWEEP_RUN_UNFIT=1 did not run it: $(cat "$work/small/sweep.csv")"

# Usage errors exit 2.
rc=0; scripts/sweep.sh "$recipe" >/dev/null 2>&1 || rc=$?; [[ $rc == 2 ]] || fail "missing WORLD: exit $rc"
rc=0; scripts/sweep.sh "$recipe" four >/dev/null 2>&1 || rc=$?; [[ $rc == 2 ]] || fail "bad WORLD: exit $rc"
rc=0; scripts/sweep.sh nowhere.yaml 4 >/dev/null 2>&1 || rc=$?; [[ $rc == 2 ]] || fail "missing recipe: exit $rc"
echo PASS
