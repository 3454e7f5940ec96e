#!/usr/bin/env bash
# Files that are not files: a FIFO, a device or a directory where a recipe, model, shard or
# tokenizer file belongs is refused at once with exit code 2 and a message naming the path and
# what it is; nothing hangs (each case runs under a 20 s timeout; 124 would mean it blocked).
# One row per case: expected message (extended regex) | the command line.
source "$(dirname "$0")/lib.sh"
mark_outside
make_byte_data "$work/data"
mkfifo "$work/fifo.yaml" "$work/model.bin" "$work/train_000.bin"
ln -s /dev/urandom "$work/random.yaml"
mkdir -p "$work/tok" "$work/dir.yaml"
mkfifo "$work/tok/encoder.json"
mkdir -p "$work/bad/val_000.bin" "$work/bad2"
ln -s "$work/nowhere" "$work/bad2/val_001.bin"
cp datasets/tokenizer/vocab.bpe "$work/tok/" 2>/dev/null || echo "#version: 0.2" > "$work/tok/vocab.bpe"
q=configs/debug/tiny.yaml
data=(--set "data.train=$work/data/train_*.bin" --set "data.val=$work/data/val_*.bin" --set data.tokenizer=byte)
cases=(
  "recipe file '$work/fifo.yaml': not a regular file \(a FIFO\)|train $work/fifo.yaml"
  "recipe file '/dev/zero': not a regular file \(a character device\)|train /dev/zero"
  "recipe file '$work/random.yaml': not a regular file \(a character device\)|validate $work/random.yaml"
  "$work/dir.yaml: is a directory|plan $work/dir.yaml"
  "llm.c model file '$work/model.bin': not a regular file \(a FIFO\)|train $q ${data[*]} --set model.init_from=$work/model.bin"
  "the pattern '$work/train_\\*.bin' matches '$work/train_000.bin', which is a FIFO|train $q --set data.train=$work/train_*.bin --set data.val=$work/data/val_*.bin --set data.tokenizer=byte"
  "'/dev/zero' is a character device|data inspect /dev/zero"
  "'$work/bad/val_000.bin', which is a directory|train $q --set data.train=$work/data/train_*.bin --set data.val=$work/bad/val_*.bin --set data.tokenizer=byte"
  "'$work/bad2/val_001.bin', which is a dangling or looping symbolic link|train $q --set data.train=$work/data/train_*.bin --set data.val=$work/bad2/val_*.bin --set data.tokenizer=byte"
  "encoder.json': not a regular file \(a FIFO\)|data encode hello --tokenizer gpt2 --tokenizer-dir $work/tok"
)
expect_refusals 20 "${cases[@]}"
expect_outside_unchanged
echo "PASS: $refusals non-files refused with exit code 2, none hung"
