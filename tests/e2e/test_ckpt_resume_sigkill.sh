#!/usr/bin/env bash
# Exact resume on the CPU (N = 30): 2N steps in one run, versus a run killed with SIGKILL at
# a random moment after its checkpoint at N, then resume to 2N: bit-identical losses at every step after N
# and bit-identical final weights (the final checkpoints' rank files compare equal).
source "$(dirname "$0")/lib.sh"
make_byte_data "$work/data"
common=(--set "data.train=$work/data/train_*.bin" --set "data.val=$work/data/val_*.bin" --set train.steps=60
        --set checkpoint.every=30)
export OMP_NUM_THREADS=1

"$trainer" train configs/debug/resume.yaml "${common[@]}" --set "checkpoint.dir=$work/a" \
  --set "log.metrics=$work/a.jsonl" > "$work/a.log" 2>&1 || fail "uninterrupted run: $(cat "$work/a.log")"

killed=0
for attempt in 1 2 3; do
  rm -rf "$work/b" "$work/b.jsonl"
  "$trainer" train configs/debug/resume.yaml "${common[@]}" --set "checkpoint.dir=$work/b" \
    --set "log.metrics=$work/b.jsonl" > "$work/b1.log" 2>&1 &
  pid=$!
  # A random moment after the checkpoint at step 30: once step 31..45 has been logged.
  target=$((31 + RANDOM % 15))
  while kill -0 $pid 2>/dev/null; do
    last=$( (losses "$work/b.jsonl" 2>/dev/null || true) | tail -1 | cut -d' ' -f1)
    [[ -f "$work/b/step_00000030/manifest.yaml" && ${last:-0} -ge $target ]] && break
    sleep 0.005
  done
  if kill -9 $pid 2>/dev/null && [[ ! -d "$work/b/step_00000060" ]]; then
    wait $pid || true
    killed=1
    break
  fi
  wait $pid || true
done
[[ $killed == 1 ]] || fail "the run finished before it could be killed (3 attempts)"
last_before=$(losses "$work/b.jsonl" | tail -1 | cut -d' ' -f1)
echo "killed after step $last_before"

"$trainer" train configs/debug/resume.yaml "${common[@]}" --set "checkpoint.dir=$work/b" \
  --set "log.metrics=$work/b.jsonl" > "$work/b2.log" 2>&1 || fail "resumed run: $(cat "$work/b2.log")"
grep -q "resuming from .*step_00000030" "$work/b2.log" || fail "did not resume from step 30: $(cat "$work/b2.log")"

# The resumed run appended steps 31..60 after whatever the killed run logged.
diff <(losses "$work/a.jsonl" | awk '$1 > 30') <(losses "$work/b.jsonl" | tail -30) || fail "losses after step 30 differ"
cmp "$work/a/step_00000060/rank_00000.bin" "$work/b/step_00000060/rank_00000.bin" || fail "final weights differ"
echo "PASS: the 30 steps after the checkpoint match bit for bit; final weights identical"
