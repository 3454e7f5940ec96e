#!/usr/bin/env bash
# sweep.sh RECIPE WORLD [LAYOUTS]: benchmark a recipe over parallel layouts of WORLD ranks.
#
# LAYOUTS is a comma-separated list of DxTxP:ZERO:MICRO:SCHEDULE (SCHEDULE gpipe, 1f1b, zero_bubble, or
# interleavedV over V virtual stages), e.g. "4x1x1:1:2:1f1b,1x2x2:0:2:gpipe,1x1x2:0:1:interleaved2";
# without it every valid layout that `trainer plan RECIPE --world WORLD --search --json` lists
# (with the recipe's recomputation mode) is run. Each layout runs `trainer bench RECIPE --json
# --set ...` under srun (inside a Slurm allocation, SLURM_JOB_ID set) or mpiexec. A layout that
# fails (invalid, out of memory, crash, timeout, no result) becomes a row with its reason and
# the sweep goes on; layouts the plan says do not fit are skipped (SWEEP_RUN_UNFIT=1 runs them).
#
# Writes SWEEP_OUT/sweep.csv (layout, status, reason, bench's figures, plan's predictions),
# SWEEP_OUT/sweep.png (tokens/s per layout, by scripts/sweep_plot.py with python3-matplotlib)
# and SWEEP_OUT/logs/<layout>.log. Exits 0 when the CSV and the chart were written, whatever
# the layouts did; 2 on a usage error.
#
# Environment:
#   TRAINER            trainer binary (default build/trainer)
#   SWEEP_OUT          output directory (default runs/sweep/<recipe>-w<WORLD>)
#   SWEEP_DEVICE       --device for trainer plan (a100|h100|h200|cpu; default: plan's, i.e. cpu
#                      for CPU recipes)
#   SWEEP_MEMORY       --memory for trainer plan: GiB per rank the fit check assumes
#   SWEEP_BENCH_ARGS   extra bench arguments (default "--steps 5 --warmup 1")
#   SWEEP_TIMEOUT      seconds per layout (default 600)
#   SWEEP_RUN_UNFIT    1: also run layouts the plan says do not fit
#   SWEEP_LAUNCHER     launcher command prefix, WORLD ranks (default: srun -n WORLD, or mpiexec -n WORLD)
#   TRAINER_BENCH_CMD  command that replaces "TRAINER bench" (tests use a stand-in)
set -euo pipefail

usage() {
  sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
[[ $# -ge 2 && $# -le 3 ]] || usage
recipe="$1"
world="$2"
layouts="${3:-}"
[[ -f "$recipe" ]] || { echo "sweep.sh: recipe '$recipe' not found" >&2; exit 2; }
[[ "$world" =~ ^[1-9][0-9]*$ ]] || { echo "sweep.sh: WORLD '$world' is not a positive integer" >&2; exit 2; }

cd_root="$(cd "$(dirname "$0")/.." && pwd)"
trainer="${TRAINER:-$cd_root/build/trainer}"
python=/usr/bin/python3
name="$(basename "$recipe" .yaml)"
out="${SWEEP_OUT:-runs/sweep/$name-w$world}"
timeout_s="${SWEEP_TIMEOUT:-600}"
read -r -a bench_args <<<"${SWEEP_BENCH_ARGS:---steps 5 --warmup 1}"
if [[ -n "${TRAINER_BENCH_CMD:-}" ]]; then
  read -r -a bench <<<"$TRAINER_BENCH_CMD"
else
  [[ -x "$trainer" ]] || { echo "sweep.sh: trainer binary '$trainer' not found; build it or set TRAINER" >&2; exit 2; }
  bench=("$trainer" bench)
fi
if [[ -n "${SWEEP_LAUNCHER:-}" ]]; then
  read -r -a launcher <<<"$SWEEP_LAUNCHER"
elif [[ -n "${SLURM_JOB_ID:-}" ]]; then
  launcher=(srun --ntasks="$world")
else
  launcher=(mpiexec --oversubscribe -n "$world" -x OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" -x OMP_WAIT_POLICY=passive
            -x OPENBLAS_NUM_THREADS=1)
  [[ $(id -u) -eq 0 ]] && launcher=(mpiexec --allow-run-as-root "${launcher[@]:1}")
fi
mkdir -p "$out/logs"
csv="$out/sweep.csv"

# ---- the plan: every valid layout with its predicted step time and memory ----
plan_args=(plan "$recipe" --world "$world" --search --json)
[[ -n "${SWEEP_DEVICE:-}" ]] && plan_args+=(--device "$SWEEP_DEVICE")
[[ -n "${SWEEP_MEMORY:-}" ]] && plan_args+=(--memory "$SWEEP_MEMORY")
plan_json="$out/plan.json"
if ! "$trainer" "${plan_args[@]}" >"$plan_json" 2>"$out/logs/plan.log"; then
  if [[ -z "$layouts" ]]; then
    echo "sweep.sh: trainer plan failed, so there is no layout list:" >&2
    cat "$out/logs/plan.log" >&2
    exit 2
  fi
  echo "sweep.sh: trainer plan failed (no predictions in the CSV): $(head -1 "$out/logs/plan.log")" >&2
  echo '{"layouts": [], "recipe_recompute": "none", "memory_limit_bytes": 0}' >"$plan_json"
fi

# One line per layout to run, fields separated by \x1f (empty fields stay):
# "key status reason plan_step_s plan_memory_bytes fits", key =
# DxTxP:ZERO:MICRO:SCHEDULE; status "run" or "invalid" (a malformed entry of LAYOUTS).
layout_list="$out/layouts.txt"
"$python" - "$plan_json" "$layouts" >"$layout_list" <<'PY'
import json, re, sys
plan = json.load(open(sys.argv[1]))
given = sys.argv[2]
by_key = {}
for l in plan["layouts"]:
    sched = l["schedule"] + (str(l["virtual_stages"]) if l.get("virtual_stages", 1) > 1 else "")
    key = f'{l["data"]}x{l["tensor"]}x{l["pipeline"]}:{l["zero"]}:{l["micro_batch"]}:{sched}'
    if l["recompute"] == plan["recipe_recompute"]:
        by_key.setdefault(key, l)
def row(key, status, reason=""):
    l = by_key.get(key)
    step = f'{l["time"]["step_s"]:.6g}' if l else ""
    mem = str(l["needed_bytes"]) if l else ""
    fits = ("1" if l["fits"] else "0") if l else ""
    print("\x1f".join([key, status, reason, step, mem, fits]))
if given:
    for entry in given.split(","):
        entry = entry.strip()
        m = re.fullmatch(r"([1-9]\d*)x([1-9]\d*)x([1-9]\d*):([0-3]):([1-9]\d*):(gpipe|1f1b|zero_bubble|interleaved[2-9]\d*)",
                         entry)
        if not m:
            row(entry, "invalid", f"malformed layout '{entry}': want DxTxP:ZERO:MICRO:SCHEDULE (gpipe, 1f1b, zero_bubble, "
                                  f"or interleavedV over V virtual stages), e.g. 2x2x1:1:4:1f1b")
        else:
            row(entry, "run")
else:
    for key in sorted(by_key, key=lambda k: (by_key[k]["rank"])):
        row(key, "run")
PY

# ---- run each layout ----
csv_field() {  # quotes a CSV field
  local s="${1//\"/\"\"}"
  printf '"%s"' "$s"
}
echo "layout,data,tensor,pipeline,zero,micro_batch,schedule,status,reason,tokens_per_s,tokens_per_s_per_rank,mfu,step_s,forward_s,backward_s,forward_backward_s,optimizer_s,comm_s,bubble_s,peak_memory_bytes,plan_step_s,plan_memory_bytes" >"$csv"
bench_fields=(tokens_per_s tokens_per_s_per_rank mfu step_s forward_s backward_s forward_backward_s optimizer_s comm_s bubble_s peak_memory_bytes)
total=$(wc -l <"$layout_list")
n=0
while IFS=$'\x1f' read -r key status reason plan_step plan_mem fits; do
  n=$((n + 1))
  d="" t="" p="" z="" mb="" sched=""
  if [[ "$status" == run ]]; then
    IFS='x:' read -r d t p z mb sched <<<"$key"
  fi
  values=""
  log="$out/logs/$(printf '%s' "$key" | tr -c 'A-Za-z0-9._-' '_').log"
  if [[ "$status" == run && "$fits" == 0 && "${SWEEP_RUN_UNFIT:-0}" != 1 ]]; then
    status=skipped
    reason="out of memory by the plan: needs $plan_mem bytes per rank"
  elif [[ "$status" == run ]]; then
    chunks=1 schedule=$sched
    if [[ "$sched" == interleaved* ]]; then chunks=${sched#interleaved} schedule=interleaved; fi
    sets=(--set "parallel.data=$d" --set "parallel.tensor=$t" --set "parallel.pipeline=$p" --set "parallel.zero=$z"
          --set "train.micro_batch=$mb" --set "parallel.schedule=$schedule" --set "parallel.virtual_stages=$chunks")
    rc=0
    started=$SECONDS
    timeout --kill-after=10 "$timeout_s" "${launcher[@]}" "${bench[@]}" "$recipe" --json "${sets[@]}" "${bench_args[@]}" \
      <>/dev/null >"$log.out" 2>"$log" || rc=$?
    cat "$log.out" >>"$log"
    json="$(grep -E '^\{' "$log.out" | tail -1 || true)"
    rm -f "$log.out"
    if [[ $rc -eq 0 && -n "$json" ]] && values="$("$python" - "$json" "${bench_fields[@]}" <<'PY'
import json, sys
d = json.loads(sys.argv[1])
# A field bench leaves null (forward_s and backward_s under train.graphs: step) or does not print
# (an older trainer: forward_backward_s) becomes an empty cell.
def cell(v):
    return "" if v is None else format(v, ".6g") if isinstance(v, float) else str(v)
print(",".join(cell(d.get(k)) for k in sys.argv[2:]))
PY
)"; then
      status=ok
      reason=""
    elif [[ $rc -eq 124 ]] || ((SECONDS - started >= timeout_s)); then
      status=timeout
      reason="no result after ${timeout_s} s"
    elif grep -qiE 'out of memory|cannot allocate|bad_alloc|signal 9' "$log" || [[ $rc -eq 137 ]]; then
      status=oom
      reason="out of memory (exit $rc): $(grep -m1 -iE 'out of memory|cannot allocate|bad_alloc|signal 9' "$log" || true)"
    elif [[ $rc -eq 2 ]]; then
      status=invalid
      reason="$(grep -m1 -E '^error: ' "$log" || tail -1 "$log")"
    elif [[ $rc -ne 0 ]]; then
      status=crash
      reason="exit $rc: $(grep -v '^\s*$' "$log" | tail -1 || true)"
    else
      status=no_result
      reason="bench printed no JSON object"
    fi
    reason="${reason:0:300}"
  fi
  [[ -n "$values" && "$status" == ok ]] || values=",,,,,,,,,,"
  printf '%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n' "$(csv_field "$key")" "$d" "$t" "$p" "$z" "$mb" "$sched" "$status" \
    "$(csv_field "$reason")" "$values" "$plan_step" "$plan_mem" >>"$csv"
  printf 'sweep: [%d/%d] %-22s %-8s %s\n' "$n" "$total" "$key" "$status" "$reason"
done <"$layout_list"

# ---- chart ----
if ! "$python" "$cd_root/scripts/sweep_plot.py" "$csv" "$out/sweep.png" "$name on $world ranks"; then
  echo "sweep.sh: the chart failed (scripts/sweep_plot.py needs python3-matplotlib; scripts/setup.sh installs it)" >&2
  exit 1
fi
echo "sweep: wrote $csv and $out/sweep.png"
