#!/usr/bin/env bash
# Two `data prepare` runs into one --out: the second stops with exit 2 naming the first (pid,
# host) before it writes anything, whichever phase the first is in; the first then finishes
# and the folder holds exactly its shards (byte-equal to a run alone). A lock left by a prepare
# that died is taken over. A folder whose publication did not finish (the .publishing marker a
# crash leaves) is refused by training, naming it, until a rerun of data prepare publishes the
# whole set again. A checkpoint.dir and a prepare --out share the lock: a prepare does not
# write into the folder of a running trainer.
source "$(dirname "$0")/lib.sh"
python3 - "$work/big.txt" <<'PY'
import random, sys
random.seed(5)
words = "the a whale sea ship captain white long of and to in was he it that his".split()
with open(sys.argv[1], "w") as f:
    for d in range(6000):
        f.write("\n".join(" ".join(random.choice(words) for _ in range(12)) for _ in range(40)) + "\n\n\n\n")
PY
prep=(data prepare --tokenizer byte --shard-tokens 400000 --threads 1 --quiet)

"$trainer" "${prep[@]}" --input "$work/big.txt" --val-fraction 0.05 --out "$work/alone" > "$work/alone.log" 2>&1 ||
  fail "prepare alone: $(cat "$work/alone.log")"

# 1. A second prepare while the first holds the folder (the first is stopped while it holds
# it, so the timing cannot decide the outcome).
"$trainer" "${prep[@]}" --input "$work/big.txt" --val-fraction 0.05 --out "$work/out" > "$work/first.log" 2>&1 &
first=$!
for _ in $(seq 500); do [[ -s "$work/out/.lock" ]] && break; sleep 0.01; done
kill -STOP "$first" 2>/dev/null || fail "case 1: the first prepare ended before it could be held: $(cat "$work/first.log")"
[[ -s "$work/out/.lock" ]] || { kill -CONT "$first"; fail "case 1: the first prepare never took the lock"; }
# SIGSTOP takes effect asynchronously: wait until every thread of the first is stopped, so the
# folder is still while the second runs.
for _ in $(seq 500); do
  stopped=1
  for stat in /proc/"$first"/task/*/stat; do [[ "$(awk '{ print $3 }' "$stat" 2>/dev/null)" == T ]] || stopped=0; done
  ((stopped)) && break
  sleep 0.01
done
before=$(cd "$work/out" && find . | sort)
rc=0
"$trainer" "${prep[@]}" --input "$work/big.txt" --val-fraction 0.2 --out "$work/out" > "$work/second.log" 2>&1 || rc=$?
kill -CONT "$first"
[[ $rc == 2 ]] || fail "case 1: second prepare exit $rc, want 2: $(cat "$work/second.log")"
grep -q "^error: data prepare --out: $work/out is in use by data prepare, pid $first on host $(hostname) since " \
  "$work/second.log" || fail "case 1: the holder is not named: $(cat "$work/second.log")"
[[ "$(cd "$work/out" && find . | sort)" == "$before" ]] || fail "case 1: the second prepare changed the folder"
wait "$first" || fail "case 1: the first prepare failed: $(cat "$work/first.log")"
for f in "$work"/alone/*.bin; do
  cmp -s "$f" "$work/out/$(basename "$f")" || fail "case 1: $(basename "$f") differs from a prepare alone"
done
[[ "$(ls "$work/out")" == "$(ls "$work/alone")" ]] || fail "case 1: other files: $(ls "$work/out")"
[[ ! -s "$work/out/.lock" && ! -e "$work/out/.publishing" && ! -e "$work/out/.staging" ]] ||
  fail "case 1: lock, marker or staging left: $(ls -A "$work/out")"

# 2. A training run holds its checkpoint.dir: a prepare into it stops too.
make_byte_data "$work/data"
"$trainer" train configs/debug/tiny.yaml --set "data.train=$work/data/train_*.bin" --set "data.val=$work/data/val_*.bin" \
  --set train.steps=2000 --set checkpoint.every=0 --set eval.every=0 --set "checkpoint.dir=$work/ck" \
  > "$work/train.log" 2>&1 &
trainer_pid=$!
for _ in $(seq 500); do grep -q "^step " "$work/train.log" 2>/dev/null && break; sleep 0.02; done
rc=0
"$trainer" "${prep[@]}" --input "$work/big.txt" --out "$work/ck" > "$work/into_ck.log" 2>&1 || rc=$?
kill -TERM "$trainer_pid"; wait "$trainer_pid" || true
[[ $rc == 2 ]] || fail "case 2: prepare into a running checkpoint.dir: exit $rc: $(cat "$work/into_ck.log")"
grep -q "^error: data prepare --out: $work/ck is in use by trainer, pid $trainer_pid on host" "$work/into_ck.log" ||
  fail "case 2: $(cat "$work/into_ck.log")"
! ls "$work/ck" | grep -q "train_" || fail "case 2: the prepare wrote shards into the checkpoint.dir"

# 3. A lock left by a prepare that died: taken over (the kernel dropped its flock).
mkdir -p "$work/stale"
echo "data prepare, pid 999999 on host gone since 2026-01-01T00:00:00Z" > "$work/stale/.lock"
"$trainer" "${prep[@]}" --input "$work/data/text.txt" --out "$work/stale" > "$work/stale.log" 2>&1 ||
  fail "case 3: $(cat "$work/stale.log")"
[[ ! -s "$work/stale/.lock" ]] || fail "case 3: the lock was not released"

# 4. An unfinished publication (what a crash between its renames leaves): training refuses the
# folder naming the marker; a rerun of the prepare publishes again and removes it.
cp "$work"/data/train_*.bin "$work"/data/val_*.bin "$work/stale/"
echo "data prepare, pid 999999 publishing 3 shards from $work/stale/.staging" > "$work/stale/.publishing"
rc=0
"$trainer" train configs/debug/tiny.yaml --set "data.train=$work/stale/train_*.bin" --set "data.val=$work/stale/val_*.bin" \
  --set train.steps=1 > "$work/mixed.log" 2>&1 || rc=$?
[[ $rc == 2 ]] || fail "case 4: training on a half-published folder: exit $rc: $(cat "$work/mixed.log")"
grep -q "its folder holds $work/stale/.publishing (data prepare, pid 999999 publishing 3 shards from .*: a command that replaces the folder.s files as one set did not finish" "$work/mixed.log" ||
  fail "case 4: $(cat "$work/mixed.log")"
"$trainer" "${prep[@]}" --input "$work/data/text.txt" --out "$work/stale" > "$work/rerun.log" 2>&1 ||
  fail "case 4: rerun: $(cat "$work/rerun.log")"
[[ ! -e "$work/stale/.publishing" ]] || fail "case 4: the rerun left the marker"
"$trainer" train configs/debug/tiny.yaml --set "data.train=$work/stale/train_*.bin" --set "data.val=$work/stale/val_*.bin" \
  --set train.steps=1 --set eval.every=0 > "$work/after.log" 2>&1 || fail "case 4: training after the rerun: $(cat "$work/after.log")"
echo "PASS: prepare lock and publication"
