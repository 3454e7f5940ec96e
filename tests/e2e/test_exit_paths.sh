#!/usr/bin/env bash
# Exit paths under mpiexec: every user error ends the whole job with exit code 2, cleanly (no
# signal, no "fatal", no trainer process left behind, within 60 s), with its message printed:
# - when every rank fails alike, once, by rank 0;
# - when ranks fail differently, rank 0's message and then each other one with its ranks;
# - when one rank fails alone while the others carry on, by that rank with its rank and host,
#   and the job is ended with exit code 2 instead of waiting for parallel.timeout_s.
# No file outside the test's scratch directory changes.
source "$(dirname "$0")/lib.sh"
mark_outside
trainer=$(realpath "$trainer")
make_byte_data "$work/good/data"
mkdir -p "$work/empty/data" "$work/badmagic/data"
cp "$work/good/data/val_000000.bin" "$work/badmagic/data/"
printf 'not a shard at all, just text padded out to the header size' > "$work/badmagic/data/train_000000.bin"
truncate -s 4096 "$work/badmagic/data/train_000000.bin"
for d in good empty badmagic; do cp configs/debug/tiny.yaml "$work/$d/r.yaml"; done
data=(--set "data.train=data/train_*.bin" --set "data.val=data/val_*.bin" --set train.steps=200 --set log.metrics=)
g="$work/good"

# A run that holds the lock of $work/held (for the lock case), stopped at the end.
"$trainer" train "$g/r.yaml" --set "data.train=$g/data/train_*.bin" --set "data.val=$g/data/val_*.bin" \
  --set train.steps=1000000 --set checkpoint.every=0 --set "checkpoint.dir=$work/held" > "$work/holder.log" 2>&1 &
holder=$!
trap 'kill -9 $holder 2> /dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 3000); do [[ -e "$work/held/.lock" ]] && break; sleep 0.01; done

# Each row: name | want (extended regex; each line of it must appear) | mpiexec arguments after
# the common ones ("@D" stands for the working directory $work/D).
cases=(
  "world size mismatch (train)|^error: .*data 2 x tensor 1 x pipeline 1 = 2 ranks, but the job has 3|-n 3 -wdir @good $trainer train r.yaml ${data[*]} --set parallel.data=2"
  "world size mismatch (bench)|^error: .*= 2 ranks, but the job has 8|-n 8 -wdir @good $trainer bench r.yaml --set parallel.data=2"
  "sample: no checkpoint|^error: .*no such directory|-n 2 -wdir @good $trainer sample $work/nowhere"
  "global batch|^error: .*train.global_batch: 4 is not a multiple of train.micro_batch 2 x parallel.data 8|-n 8 -wdir @good $trainer train r.yaml ${data[*]} --set parallel.data=8"
  "tensor degree|^error: .*parallel.tensor: 4 does not divide model.n_head 2|-n 4 -wdir @good $trainer train r.yaml ${data[*]} --set parallel.tensor=4"
  "pipeline degree|^error: .*parallel.pipeline: 4 stages but model.n_layer is 2|-n 4 -wdir @good $trainer bench r.yaml --set parallel.pipeline=4"
  "every rank lacks data|^error: r.yaml: data.train: no file matches the pattern 'data/train_\\*.bin'|-n 4 -wdir @empty $trainer train r.yaml ${data[*]} --set parallel.data=2 --set parallel.tensor=2 --set train.global_batch=8 --set eval.batches=2"
  "bench --steps 0|^error: .*--steps|-n 2 -wdir @good $trainer bench r.yaml --steps 0 --set parallel.data=2"
  "a locked checkpoint folder|^error: .*$work/held.* is in use by .*pid $holder|-n 2 -wdir @good $trainer train r.yaml ${data[*]} --set parallel.data=2 --set checkpoint.dir=$work/held"
  "one rank lacks data|^error \\(rank 1 of 2, host [^,]+, pid [0-9]+\\): r.yaml: data.train: no file matches the pattern 'data/train_\\*.bin'
^error: the other ranks did not stop with rank 1 within|-n 1 -wdir @good $trainer train r.yaml ${data[*]} --set parallel.data=2 : -n 1 -wdir @empty $trainer train r.yaml ${data[*]} --set parallel.data=2"
  "ranks fail differently|^error: r.yaml: data.train: token shard 'data/train_000000.bin': magic number
^error \\(rank 1\\): r.yaml: data.train: no file matches the pattern 'data/train_\\*.bin'|-n 1 -wdir @badmagic $trainer train r.yaml ${data[*]} --set parallel.data=2 : -n 1 -wdir @empty $trainer train r.yaml ${data[*]} --set parallel.data=2"
  "three ranks fail differently|^error: r.yaml: data.train: token shard 'data/train_000000.bin': magic number
^error \\(ranks 1, 2\\): r.yaml: data.train: no file matches the pattern 'data/train_\\*.bin'|-n 1 -wdir @badmagic $trainer bench r.yaml --data recipe ${data[*]} --set parallel.data=3 --set train.global_batch=6 --set eval.batches=3 : -n 2 -wdir @empty $trainer bench r.yaml --data recipe ${data[*]} --set parallel.data=3 --set train.global_batch=6 --set eval.batches=3"
)
for row in "${cases[@]}"; do
  name="${row%%|*}"
  rest="${row#*|}"
  want="${rest%|*}"
  read -r -a args <<< "${rest##*|}"
  args=("${args[@]//@/$work/}")
  rc=0
  timeout 60 "${MPIEXEC[@]}" "${args[@]}" > "$work/out.log" 2>&1 || rc=$?
  [[ $rc != 124 ]] || fail "$name: hung"
  [[ $rc == 2 ]] || fail "$name: exit code $rc, want 2: $(cat "$work/out.log")"
  while IFS= read -r line; do
    grep -Eq -- "$line" "$work/out.log" || fail "$name: want /$line/, got: $(cat "$work/out.log")"
  done <<< "$want"
  [[ $(grep -c "^error" "$work/out.log") == $(wc -l <<< "$want") ]] ||
    fail "$name: want $(wc -l <<< "$want") error lines: $(cat "$work/out.log")"
  ! grep -qi "segmentation\|signal\|core dumped\|fatal\|^step " "$work/out.log" || fail "$name: unclean exit: $(cat "$work/out.log")"
  for _ in $(seq 500); do pgrep -f "$trainer (train|bench|sample) (r.yaml|$work/nowhere)" > /dev/null || break; sleep 0.01; done
  ! pgrep -f "$trainer (train|bench|sample) (r.yaml|$work/nowhere)" > /dev/null || fail "$name: trainer processes left behind"
  echo "ok: $name"
done
kill -0 $holder 2> /dev/null || fail "the lock holder ended early: $(cat "$work/holder.log")"
kill -9 $holder
wait $holder 2> /dev/null || true
expect_outside_unchanged
echo "PASS: ${#cases[@]} user errors under mpiexec ended with exit code 2 and their messages"
