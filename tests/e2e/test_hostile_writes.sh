#!/usr/bin/env bash
# Exports and writes that could destroy things. `ckpt export --out` and `data prepare --out`
# onto a checkpoint's own rank file or manifest, into a checkpoint folder or directory (any
# spelling: "..", a link), onto a device node, a FIFO, a directory or a link to a device: each
# exits 2 within 20 s naming the path and the rule; the checkpoint, the device nodes and the
# FIFO are as they were. A full disk (a 64 KiB tmpfs) during an export or a data prepare exits
# 2 naming the path and "No space left on device", the old file untouched and no temporary
# left. log.metrics naming a FIFO nobody reads (it would block), a directory or a full device
# (/dev/full) stops the run with exit 2 naming it; /dev/null works. Controls: an export to a new
# path and over an old regular file succeed. Every case
# also checks that no file outside the test's scratch directory changed.
source "$(dirname "$0")/lib.sh"
trainer=$(realpath "$trainer")
export OMP_NUM_THREADS=1
make_byte_data "$work/data"
mark_outside

"$trainer" train configs/debug/tiny.yaml --set "data.train=$work/data/train_*.bin" --set "data.val=$work/data/val_*.bin" \
  --set train.steps=2 --set eval.every=0 --set "checkpoint.dir=$work/ckpt" > "$work/train.log" 2>&1 ||
  fail "training: $(cat "$work/train.log")"
step="$work/ckpt/step_00000002"
[[ -f "$step/manifest.yaml" && -f "$work/ckpt/latest" ]] || fail "no checkpoint: $(ls -R "$work/ckpt")"
ckpt_sums() { (cd "$work/ckpt" && find . -type f ! -name .lock -print0 | sort -z | xargs -0 md5sum); }
ckpt_before=$(ckpt_sums)

mkdir -p "$work/other" "$work/taken_dir" "$work/fifo_out" "$work/dev_out"
ln -s "$step" "$work/alias"
ln -s /dev/zero "$work/zero.bin"
mkfifo "$work/pipe.bin" "$work/fifo_out/train_000000.bin"
mknod_ok=0
if mknod "$work/dev_out/val_000009.bin" c 1 3 2> /dev/null; then mknod_ok=1; fi
text="$work/data/text.txt"
export_to() { echo "ckpt export $step --format $1 --out $2"; }
rule_ckpt="is a checkpoint \(it holds manifest.yaml\); writing there could replace its own files"
rule_root="is a checkpoint directory \(it holds latest or step_NNNNNNNN checkpoints\)"
rule_kind="it exists and is not a regular file"
metrics_run="train configs/debug/tiny.yaml --set data.train=$work/data/train_*.bin --set data.val=$work/data/val_*.bin --set train.steps=2"
cases=(
  "llm.c model file '$step/rank_00000.bin': '$step' $rule_ckpt|$(export_to llmc "$step/rank_00000.bin")"
  "safetensors file '$step/manifest.yaml': '$step' $rule_ckpt|$(export_to safetensors "$step/manifest.yaml")"
  "llm.c model file '$step/model.bin': '$step' $rule_ckpt|$(export_to llmc "$step/model.bin")"
  "safetensors file '$work/ckpt/latest': '$work/ckpt' $rule_root|$(export_to safetensors "$work/ckpt/latest")"
  "llm.c model file '$work/ckpt/model.bin': '$work/ckpt' $rule_root|$(export_to llmc "$work/ckpt/model.bin")"
  "'$step' $rule_ckpt|$(export_to llmc "$work/other/../ckpt/step_00000002/rank_00000.bin")"
  "'$step' $rule_ckpt|$(export_to safetensors "$work/alias/manifest.yaml")"
  "llm.c model file '/dev/null': $rule_kind \(a character device\)|$(export_to llmc /dev/null)"
  "safetensors file '/dev/full': $rule_kind \(a character device\)|$(export_to safetensors /dev/full)"
  "llm.c model file '$work/pipe.bin': $rule_kind \(a FIFO\)|$(export_to llmc "$work/pipe.bin")"
  "llm.c model file '$work/taken_dir': $rule_kind \(a directory\)|$(export_to llmc "$work/taken_dir")"
  "llm.c model file '$work/zero.bin': $rule_kind \(a character device\)|$(export_to llmc "$work/zero.bin")"
  "data prepare: cannot write shards into --out '$step': '$step' $rule_ckpt|data prepare --input $text --tokenizer byte --out $step --quiet"
  "data prepare: cannot write shards into --out '$work/ckpt': '$work/ckpt' $rule_root|data prepare --input $text --tokenizer byte --out $work/ckpt --quiet"
  "data prepare: cannot replace '$work/fifo_out/train_000000.bin': $rule_kind \(a FIFO\)|data prepare --input $text --tokenizer byte --out $work/fifo_out --quiet"
  "log.metrics: cannot open '$work/pipe.bin' for appending: it is a FIFO that no process reads|$metrics_run --set log.metrics=$work/pipe.bin"
  "log.metrics: cannot open '$work/taken_dir' for appending: Is a directory|$metrics_run --set log.metrics=$work/taken_dir"
  "log.metrics: cannot write '/dev/full': No space left on device|$metrics_run --set log.metrics=/dev/full"
)
if [[ $mknod_ok == 1 ]]; then
  cases+=("data prepare: cannot replace '$work/dev_out/val_000009.bin': $rule_kind \(a character device\)|data prepare --input $text --tokenizer byte --out $work/dev_out --quiet")
else
  echo "note: mknod is not permitted here; the stale-shard-name device case is skipped"
fi
expect_refusals 20 "${cases[@]}"
[[ "$(ckpt_sums)" == "$ckpt_before" ]] || fail "the checkpoint changed"
[[ -c /dev/null && -c /dev/full && -p "$work/pipe.bin" && -p "$work/fifo_out/train_000000.bin" && -d "$work/taken_dir" ]] ||
  fail "a device, FIFO or directory was replaced"
[[ $mknod_ok == 0 || -c "$work/dev_out/val_000009.bin" ]] || fail "data prepare removed a device named like a shard"
[[ -z "$(find "$work/taken_dir" "$work/other" -mindepth 1)" && ! -e "$step/model.bin" && ! -e "$work/ckpt/model.bin" ]] ||
  fail "something was written: $(find "$work/taken_dir" "$work/other" -mindepth 1; ls -A "$step" "$work/ckpt")"
[[ -z "$(find "$work" -name '.*.tmp.*')" ]] || fail "a temporary file was left: $(find "$work" -name '.*.tmp.*')"
rows=$refusals

# A full disk: a 64 KiB tmpfs holds an old target; the export and the shards need more.
full="$work/full"
mkdir -p "$full"
if mount -t tmpfs -o size=64k tmpfs "$full" 2> /dev/null; then
  trap 'umount "$full" 2> /dev/null || true; rm -rf "$work"' EXIT
  echo "old model" > "$full/model.bin"
  echo "old weights" > "$full/model.safetensors"
  mkdir -p "$full/shards"
  echo "old shard" > "$full/shards/train_000000.bin"
  for row in "llmc|$full/model.bin|llm.c model file" "safetensors|$full/model.safetensors|safetensors file" \
             "prepare|$full/shards|token shard"; do
    IFS='|' read -r kind target what <<< "$row"
    # A prepare's lock file stays, empty (dir_lock.h: it is never deleted).
    before=$(cd "$full" && find . -type f ! -name .lock -print0 | sort -z | xargs -0 md5sum)
    if [[ $kind == prepare ]]; then
      args=(data prepare --input "$text" --tokenizer byte --out "$target" --val-fraction 0 --quiet)
    else
      args=(ckpt export "$step" --format "$kind" --out "$target")
    fi
    rc=0
    timeout 20 "$trainer" "${args[@]}" > "$work/full.log" 2>&1 || rc=$?
    [[ $rc == 2 ]] || fail "full disk, $kind: exit code $rc, want 2: $(cat "$work/full.log")"
    grep -Eq "cannot write $what '$target[^']*': .*No space left on device" "$work/full.log" ||
      fail "full disk, $kind: the message does not name the path and the reason: $(cat "$work/full.log")"
    [[ "$(cd "$full" && find . -type f ! -name .lock -print0 | sort -z | xargs -0 md5sum)" == "$before" ]] ||
      fail "full disk, $kind: a file changed or was left: $(ls -laR "$full")"
    [[ -z "$(find "$full" -name .lock -size +0)" ]] || fail "full disk, $kind: a lock was not released"
    [[ -z "$(find "$full" -name '.*.tmp.*')" ]] || fail "full disk, $kind: a temporary file was left"
    rows=$((rows + 1))
    echo "ok: full disk, $kind"
  done
  umount "$full"
  trap 'rm -rf "$work"' EXIT
else
  echo "note: mounting a tmpfs is not permitted here; the full-disk cases are covered by the unit test's failed write"
fi

# Controls: a new path, and an old regular file replaced whole, both beside the checkpoint.
"$trainer" ckpt export "$step" --format llmc --out "$work/model.bin" > "$work/ok.log" 2>&1 || fail "export: $(cat "$work/ok.log")"
echo "old" > "$work/model.safetensors"
"$trainer" ckpt export "$step" --format safetensors --out "$work/model.safetensors" > "$work/ok.log" 2>&1 ||
  fail "export over a regular file: $(cat "$work/ok.log")"
[[ $(stat -c %s "$work/model.bin") -gt 1024 && $(stat -c %s "$work/model.safetensors") -gt 1024 ]] || fail "exports too small"
[[ "$(ckpt_sums)" == "$ckpt_before" ]] || fail "the checkpoint changed"
"$trainer" $metrics_run --set log.metrics=/dev/null > "$work/ok.log" 2>&1 || fail "log.metrics /dev/null: $(cat "$work/ok.log")"
[[ -c /dev/null ]] || fail "/dev/null was replaced"

expect_outside_unchanged
echo "PASS: $rows destructive writes refused or failed cleanly with exit code 2; 3 controls written"
