#!/usr/bin/env bash
# Allocation bombs: a recipe whose plan needs more memory than the host offers (terabytes here,
# so that no machine the suite runs on could fit them; MemAvailable, or the limit of the cgroup
# the run is in) stops before allocating, on every rank, with exit code 2 and one message
# giving the plan's peak, what is available and from where, and the way out (`train.allow_oversubscribe: true`, which starts it anyway with a note). Nothing is
# allocated first: each case ends within 60 s without std::bad_alloc, a signal or "fatal"
# (expect_refusals checks those too).
# The cgroup cases run when this machine lets root create a memory cgroup (v1 or v2) and are
# reported as not run otherwise. No file outside the test's scratch directory changes.
source "$(dirname "$0")/lib.sh"
mark_outside
export OMP_NUM_THREADS=1
make_byte_data "$work/data"
q=configs/debug/tiny.yaml
data=(--set "data.train=$work/data/train_*.bin" --set "data.val=$work/data/val_*.bin" --set log.metrics=)
fit="the run does not fit in memory: by its plan rank 0 \(pipeline stage 0\) needs [0-9.]+ [GTP]iB at its peak"
avail="is available \(MemAvailable [0-9.]+ GiB of [0-9.]+ GiB"
huge=(--set model.d_model=16384 --set model.n_head=128 --set model.n_layer=200)

# check_clean NAME LOG: no trace of an allocation failure, a signal or an internal error.
check_clean() {
  ! grep -qi "bad_alloc\|signal\|segmentation\|fatal\|killed\|^step " "$2" || fail "$1: unclean: $(cat "$2")"
}

cases=(
  "$fit.*$avail|train $q ${data[*]} ${huge[*]}"
  "$fit.*$avail|bench $q ${huge[*]}"
  "needs 11.2[0-9] TiB at its peak \(params 2.8[0-9] TiB, master 0 B, grads 2.8[0-9] TiB, optimizer 5.6[0-9] TiB|train $q ${data[*]} --set model.d_model=32768 --set model.n_head=256 --set model.n_layer=60"
  "train.allow_oversubscribe: true to start anyway|train $q ${data[*]} --set model.n_layer=2000 --set model.d_model=4096 --set model.n_head=32"
  "\`trainer plan .*tiny.yaml\` shows the plan|bench $q --set model.vocab_size=50257 --set model.d_model=12288 --set model.n_head=96 --set model.n_layer=96 --set train.micro_batch=64 --set train.global_batch=64"
)
expect_refusals 60 "${cases[@]}"
n=$refusals

# Several ranks on one host: the needs add up, every rank stops, the message is printed once.
rc=0
timeout 60 "${MPIEXEC[@]}" -n 4 "$trainer" train $q "${data[@]}" --set model.d_model=8192 --set model.n_head=64 \
  --set model.n_layer=40 --set parallel.data=4 --set train.global_batch=8 --set eval.batches=4 > "$work/mpi.log" 2>&1 || rc=$?
[[ $rc == 2 ]] || fail "4 ranks: exit code $rc, want 2: $(cat "$work/mpi.log")"
grep -Eq "^error: .*$fit.*the 4 ranks on host [^ ]+ need [0-9.]+ [GTP]iB together" "$work/mpi.log" || fail "4 ranks: $(cat "$work/mpi.log")"
[[ $(grep -c "^error" "$work/mpi.log") == 1 ]] || fail "4 ranks: the error is not printed once: $(cat "$work/mpi.log")"
check_clean "4 ranks" "$work/mpi.log"
n=$((n + 1))

# The tiny recipe fits and trains as before.
"$trainer" train $q "${data[@]}" > "$work/tiny.log" 2>&1 || fail "tiny: $(cat "$work/tiny.log")"
! grep -q "memory: note" "$work/tiny.log" || fail "tiny: a memory note: $(cat "$work/tiny.log")"

# A memory cgroup of 160 MiB around the run, when root may make one: a child of the test's
# own cgroup (so that any limit above it still applies).
make_cgroup() {
  local v1=/sys/fs/cgroup/memory v2=/sys/fs/cgroup own
  cg=""
  own=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ { print $3 }' /proc/self/cgroup)
  [[ -n $own && -d $v1$own ]] && v1=$v1$own
  own=$(awk -F: '$1 == "0" { print $3 }' /proc/self/cgroup)
  [[ -n $own && -d $v2$own ]] && v2=$v2$own
  if [[ -w $v1 && -e $v1/memory.limit_in_bytes ]]; then
    cg="$v1/trainer_test_$$"
    mkdir "$cg" 2> /dev/null && echo $((160 << 20)) > "$cg/memory.limit_in_bytes" 2> /dev/null && return 0
  elif [[ -e $v2/cgroup.controllers && -w $v2 ]] && grep -qw memory $v2/cgroup.controllers; then
    cg="$v2/trainer_test_$$"
    mkdir "$cg" 2> /dev/null && echo $((160 << 20)) > "$cg/memory.max" 2> /dev/null && return 0
  fi
  [[ -n $cg ]] && rmdir "$cg" 2> /dev/null
  cg=""
  return 1
}
# in_cgroup SECONDS CMD...: runs CMD inside the cgroup, for at most SECONDS.
in_cgroup() { bash -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$cg" timeout "$@"; }
medium=(--set model.d_model=512 --set model.n_head=8 --set model.n_layer=12 --set model.vocab_size=50257)
if make_cgroup; then
  # An MPI singleton's helper daemon may outlive the trainer for a moment.
  trap 'for _ in $(seq 100); do rmdir "$cg" 2> /dev/null && break; sleep 0.1; done; rm -rf "$work"' EXIT
  rc=0
  in_cgroup 60 "$trainer" train $q "${data[@]}" "${medium[@]}" > "$work/cg.log" 2>&1 || rc=$?
  [[ $rc == 2 ]] || fail "cgroup: exit code $rc, want 2: $(cat "$work/cg.log")"
  grep -Eq "^error: .*the run does not fit in memory: by its plan rank 0 \(pipeline stage 0\) needs [0-9.]+ MiB at its peak.*but [0-9.]+ [MK]iB is available \(MemAvailable .*; cgroup $cg limits memory to 160.0 MiB, [0-9.]+ [MK]iB of it free\)" "$work/cg.log" ||
    fail "cgroup: $(cat "$work/cg.log")"
  check_clean cgroup "$work/cg.log"
  n=$((n + 1))
  # Insisting starts the run: the note is printed and allocation begins (the kernel then ends
  # it inside the cgroup, which is what the user asked for).
  rc=0
  in_cgroup 120 "$trainer" train $q "${data[@]}" "${medium[@]}" --set train.allow_oversubscribe=true \
    --set train.steps=1 > "$work/cg_allow.log" 2>&1 || rc=$?
  [[ $rc != 2 ]] || fail "allow_oversubscribe: still refused: $(cat "$work/cg_allow.log")"
  grep -q "^memory: note: .*the run does not fit in memory.*starting because train.allow_oversubscribe is true" \
    "$work/cg_allow.log" || fail "allow_oversubscribe: no note: $(cat "$work/cg_allow.log")"
  n=$((n + 1))
  # The tiny recipe fits the cgroup and trains.
  in_cgroup 60 "$trainer" train $q "${data[@]}" > "$work/cg_tiny.log" 2>&1 || fail "cgroup tiny: $(cat "$work/cg_tiny.log")"
  echo "ok: memory cgroup $cg (160 MiB)"
else
  echo "note: cannot create a memory cgroup here; the cgroup cases did not run"
fi
expect_outside_unchanged
echo "PASS: $n allocation bombs refused before allocating, with the plan's numbers"
