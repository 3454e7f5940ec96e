#!/usr/bin/env bash
# Shards that change under a run. A training run (one process, and two data-parallel ranks)
# whose train or validation shard is truncated in place, or grows, stops with exit code 2 and
# one message naming the shard and both sizes; it is never killed by SIGBUS. A shard replaced
# by rename (the documented way to refresh data) does not disturb the run. No file outside the
# test's scratch directory changes.
# One row per case: name | what is done to the file | the file | extra --set | want (regex).
source "$(dirname "$0")/lib.sh"
mark_outside
export OMP_NUM_THREADS=1
make_byte_data "$work/big"
# A small dataset (77 steps of 4 samples per epoch), so that an epoch ends within a second.
{ head -c 6000 "$work/big/text.txt"; printf '\n\n\n'; head -c 2000 "$work/big/text.txt"; } > "$work/small.txt"
"$trainer" data prepare --input "$work/small.txt" --tokenizer byte --out "$work/small" --val-fraction 0.3 --quiet > /dev/null

changed="changed while in use: it now has"
cases=(
  "truncate|truncate -s 1030|train_000000.bin||token shard '.*/train_000000.bin' $changed 1030 bytes, [0-9]+ when it was checked"
  "truncate to the header|truncate -s 1024|train_000000.bin||token shard '.*/train_000000.bin' $changed 1024 bytes"
  "emptied|truncate -s 0|train_000000.bin||token shard '.*/train_000000.bin' $changed 0 bytes"
  "val truncated|truncate -s 1100|val_000000.bin|--set eval.every=5|token shard '.*/val_000000.bin' $changed 1100 bytes"
  "grows by a token|append|train_000000.bin||token shard '.*/train_000000.bin' $changed [0-9]+ bytes, [0-9]+ when it was checked"
  "two ranks, truncated|truncate -s 1030|train_000000.bin|--set parallel.data=2|token shard '.*/train_000000.bin' $changed 1030 bytes"
)

# last_step METRICS: the newest step logged so far (0 before the first).
last_step() { ( (losses "$1" 2>/dev/null || true) | tail -1 | cut -d' ' -f1 ); }

# start_run DIR [--set k=v]...: trains on DIR's shards in the background (pid in run_pid),
# output in DIR/run.log, metrics in DIR/m.jsonl; returns once step 5 is logged.
start_run() {
  local dir="$1" launch=()
  shift
  [[ " $* " == *" parallel.data=2 "* ]] && launch=("${MPIEXEC[@]}" -n 2)
  "${launch[@]}" "$trainer" train configs/debug/tiny.yaml --set "data.train=$dir/train_*.bin" \
    --set "data.val=$dir/val_*.bin" --set train.steps=100000 --set eval.every=0 --set log.every=1 \
    --set "log.metrics=$dir/m.jsonl" "$@" > "$dir/run.log" 2>&1 &
  run_pid=$!
  while kill -0 $run_pid 2>/dev/null && [[ $(last_step "$dir/m.jsonl") -lt 5 ]]; do sleep 0.01; done
  kill -0 $run_pid 2>/dev/null || fail "$dir: the run ended before step 5: $(cat "$dir/run.log")"
}

n=0
for row in "${cases[@]}"; do
  IFS='|' read -r name action file extra want <<< "$row"
  dir="$work/case$n"
  cp -r "$work/small" "$dir"
  read -r -a extra_args <<< "$extra"
  start_run "$dir" "${extra_args[@]}"
  if [[ "$action" == append ]]; then printf 'ab' >> "$dir/$file"; else $action "$dir/$file"; fi
  # The run must stop by itself; 60 s without stopping means the change went unnoticed.
  for _ in $(seq 6000); do kill -0 $run_pid 2>/dev/null || break; sleep 0.01; done
  if kill -0 $run_pid 2>/dev/null; then kill -9 $run_pid; fail "$name: still training 60 s after the change"; fi
  rc=0
  wait $run_pid || rc=$?
  [[ $rc == 2 ]] || fail "$name: exit code $rc, want 2: $(tail -20 "$dir/run.log")"
  # With two ranks, the one that reads the changed shard may stop while the other waits in a
  # collective; it then reports alone, naming itself ("error (rank 1 of 2, host ...): ...").
  grep -Eq -- "^error( \(rank [0-9]+ of [0-9]+[^)]*\))?: $want" "$dir/run.log" \
    || fail "$name: want /$want/, got: $(tail -20 "$dir/run.log")"
  [[ $(grep "^error" "$dir/run.log" | grep -vc "^error: the other ranks did not stop") == 1 ]] || fail "$name: the error is not printed once: $(tail -20 "$dir/run.log")"
  ! grep -qi "bus error\|SIGBUS\|signal\|segmentation\|fatal" "$dir/run.log" || fail "$name: unclean exit: $(tail -20 "$dir/run.log")"
  echo "ok: $name"
  n=$((n + 1))
done

# Replacing a shard by rename while the run reads it: the run keeps the file it checked and
# finishes normally.
dir="$work/renamed"
cp -r "$work/small" "$dir"
start_run "$dir" --set train.steps=1500
cp "$dir/train_000000.bin" "$dir/new.bin"
truncate -s 1030 "$dir/new.bin"
mv "$dir/new.bin" "$dir/train_000000.bin"
kill -0 $run_pid 2>/dev/null || fail "renamed: the run ended before the rename"
rc=0
wait $run_pid || rc=$?
[[ $rc == 0 ]] || fail "renamed: exit code $rc, want 0: $(tail -20 "$dir/run.log")"
[[ $(last_step "$dir/m.jsonl") == 1500 ]] || fail "renamed: did not finish: $(tail -5 "$dir/run.log")"
echo "ok: replaced by rename, the run finished"

expect_outside_unchanged
echo "PASS: $((n + 1)) shard changes: $n stopped with exit code 2 naming the shard, the rename was harmless"
