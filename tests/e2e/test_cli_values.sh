#!/usr/bin/env bash
# Numeric command-line values without meaning are refused up front: exit code 2, a message
# naming the option and the valid range (never DBL_MAX's 309 digits), before any work is done.
# One row per case: expected message (extended regex) | the command line.
source "$(dirname "$0")/lib.sh"
mark_outside
make_byte_data "$work/data"
recipe=configs/quickstart.yaml
shard=$(ls "$work"/data/train_*.bin | head -1)
cases=(
  "--world: Value 0 not in range 1 to 1048576|plan $recipe --world 0"
  "--world: Value -3 not in range 1 to 1048576|plan $recipe --world -3 --search"
  "--world: Value 0 not in range 1 to 1048576|validate $recipe --world 0"
  "--memory: Value nan is not a finite number|plan $recipe --memory nan"
  "--memory: Value -1 not in range|plan $recipe --memory -1"
  "--top: Value 0 not in range 1 to|plan $recipe --search --world 8 --top 0"
  "--stop-at: Value 0 not in range 1 to|train $recipe --stop-at 0"
  "--stop-at: Value -1 not in range 1 to|train $recipe --stop-at -1"
  "--temperature: Value -1 not in range 0 to|sample $work/nowhere --temperature -1"
  "--temperature: Value nan is not a finite number|sample $work/nowhere --temperature nan"
  "--temperature: Value inf is not a finite number|sample $work/nowhere --temperature inf"
  "--tokens: Value 0 not in range 1 to|sample $work/nowhere --tokens 0"
  "--top-k: Value -2 not in range 0 to|sample $work/nowhere --top-k -2"
  "--seq-len: Value 0 not in range 1 to|data inspect $shard --seq-len 0"
  "--seq-len: Value -5 not in range 1 to|data inspect $shard --seq-len -5"
  "--head: Value -1 not in range 0 to|data inspect $shard --head -1"
  "--global-batch: Value 0 not in range 1 to|data inspect $shard --seq-len 8 --global-batch 0"
  "--shard-tokens: Value 1 not in range 65536 to|data prepare --input $work/data/text.txt --tokenizer byte --out $work/out --shard-tokens 1"
  "--version takes no arguments \(got 'extra'\)|--version extra"
)
expect_refusals 60 "${cases[@]}"
[[ ! -e "$work/out" ]] || fail "data prepare wrote output before refusing --shard-tokens"
expect_outside_unchanged
echo "PASS: $refusals command-line values refused with exit code 2 and a readable range"
