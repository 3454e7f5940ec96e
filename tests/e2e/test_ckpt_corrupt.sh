#!/usr/bin/env bash
# Damaged checkpoints. A run saves at steps 10 and 20; then the newest checkpoint gets (a) a
# truncated rank file, (b) one corrupted byte (same size), (c) no rank file, (d) no manifest.
# checkpoint.resume: auto reports the bad one and resumes from step 10, continuing with the
# losses of the undamaged run; for (a)-(c) checkpoint.resume: <that path> exits 2 naming the
# file; `trainer ckpt inspect` reports the bad file and exits 2.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/ckpt_lib.sh"
steps=(--set train.steps=20 --set checkpoint.every=10)

train base "${steps[@]}" --set "checkpoint.dir=$work/base" --set "log.metrics=$work/base.jsonl" ||
  fail "base run: $(cat "$work/base.log")"
[[ "$(complete_steps "$work/base")" == $'step_00000010\nstep_00000020' ]] || fail "base run saved $(ls "$work/base")"
"$trainer" ckpt inspect "$work/base" > "$work/inspect_base.log" 2>&1 || fail "inspect of a good checkpoint: $(cat "$work/inspect_base.log")"

damage() {  # damage KIND DIR
  local f="$2/step_00000020/rank_00000.bin"
  case "$1" in
    truncated) truncate -s -100 "$f" ;;
    corrupted) flip_byte "$f" 4097 ;;
    no_rank_file) rm "$f" ;;
    no_manifest) rm "$2/step_00000020/manifest.yaml" ;;
  esac
}
declare -A why=([truncated]="rank_00000.bin: size .*truncated" [corrupted]="rank_00000.bin: checksum mismatch"
                [no_rank_file]="rank_00000.bin: cannot open" [no_manifest]="manifest.yaml: missing")

for kind in truncated corrupted no_rank_file no_manifest; do
  dir="$work/$kind"
  cp -r "$work/base" "$dir"
  damage "$kind" "$dir"
  size_before=$(stat -c %s "$work/base/step_00000020/rank_00000.bin")
  if [[ $kind == corrupted ]]; then
    [[ $(stat -c %s "$dir/step_00000020/rank_00000.bin") == "$size_before" ]] || fail "flip_byte changed the size"
  fi

  if [[ $kind != no_manifest ]]; then
    # trainer ckpt inspect lists the bad file and exits 2.
    rc=0
    "$trainer" ckpt inspect "$dir" > "$work/inspect_$kind.log" 2>&1 || rc=$?
    [[ $rc == 2 ]] || fail "$kind: ckpt inspect exit code $rc, want 2: $(cat "$work/inspect_$kind.log")"
    grep -Eq "rank_00000.bin .*BAD: " "$work/inspect_$kind.log" || fail "$kind: inspect does not flag the file: $(cat "$work/inspect_$kind.log")"
    grep -q "error: .*1 of 1 files failed verification" "$work/inspect_$kind.log" || fail "$kind: no error line: $(cat "$work/inspect_$kind.log")"

    # An explicit path is an error naming the file.
    rc=0
    train "explicit_$kind" "${steps[@]}" --set "checkpoint.dir=$dir" --set "checkpoint.resume=$dir/step_00000020" \
      --set "log.metrics=$work/explicit_$kind.jsonl" || rc=$?
    [[ $rc == 2 ]] || fail "$kind: explicit resume exit code $rc, want 2: $(cat "$work/explicit_$kind.log")"
    expect_log "explicit_$kind" "error: checkpoint.resume: $dir/step_00000020 cannot be loaded: .*${why[$kind]}" \
      "$kind: explicit resume does not name the file"
    [[ ! -s "$work/explicit_$kind.jsonl" ]] || fail "$kind: explicit resume trained anyway"
  fi

  # auto: reported, skipped, resumed from step 10; the continuation equals the undamaged run.
  train "auto_$kind" "${steps[@]}" --set "checkpoint.dir=$dir" --set "log.metrics=$work/auto_$kind.jsonl" ||
    fail "$kind: auto resume failed: $(cat "$work/auto_$kind.log")"
  expect_log "auto_$kind" "checkpoint: skipping $dir/step_00000020: .*${why[$kind]}" "$kind: the bad checkpoint is not reported"
  expect_log "auto_$kind" "resuming from $dir/step_00000010 " "$kind: did not resume from step 10"
  diff <(losses "$work/base.jsonl" | awk '$1 > 10') <(losses "$work/auto_$kind.jsonl") > /dev/null ||
    fail "$kind: losses after resuming from step 10 differ from the undamaged run"
  # The run saved a good step 20 in place of the damaged one.
  "$trainer" ckpt inspect "$dir" > "$work/inspect_after_$kind.log" 2>&1 ||
    fail "$kind: the new step 20 does not verify: $(cat "$work/inspect_after_$kind.log")"
  cmp -s "$work/base/step_00000020/rank_00000.bin" "$dir/step_00000020/rank_00000.bin" ||
    fail "$kind: the re-saved step 20 differs from the undamaged run's"
  echo "ok: $kind"
done
echo "PASS: truncated, corrupted and missing files are detected; auto resume falls back to step 10"
