# Shared helpers for the checkpoint end-to-end tests (sourced after lib.sh): byte-level data
# in $work/data and a short way to train configs/debug/resume.yaml on it.
export OMP_NUM_THREADS=1
make_byte_data "$work/data"
data_args=(--set "data.train=$work/data/train_*.bin" --set "data.val=$work/data/val_*.bin")

# train LOG [--set k=v]...: one training run, stdout and stderr in $work/LOG.log; returns the
# trainer's exit code.
train() {
  local log="$1"
  shift
  "$trainer" train configs/debug/resume.yaml "${data_args[@]}" "$@" > "$work/$log.log" 2>&1
}

# train_bg LOG [--set k=v]...: the same in the background; the trainer's pid in bg_pid (the
# trainer's own, so that signals reach it and not a subshell).
train_bg() {
  local log="$1"
  shift
  "$trainer" train configs/debug/resume.yaml "${data_args[@]}" "$@" > "$work/$log.log" 2>&1 &
  bg_pid=$!
}

# expect_log LOG PATTERN WHAT: fails unless $work/LOG.log matches the extended regex.
expect_log() {
  grep -Eq -- "$2" "$work/$1.log" || fail "$3; output of $1: $(cat "$work/$1.log")"
}

# flip_byte FILE OFFSET: replaces one byte by its complement (the size stays the same).
flip_byte() {
  local b
  b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
  printf "\\x$(printf %02x $((b ^ 255)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

# complete_steps DIR: the step_NNNNNNNN checkpoints with a manifest in DIR, one per line, sorted.
complete_steps() {
  local d
  for d in "$1"/step_*; do
    if [[ -f "$d/manifest.yaml" ]]; then basename "$d"; fi
  done | sort
}
