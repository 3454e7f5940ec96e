#!/usr/bin/env bash
# trainer sample: generates from a checkpoint; greedy decoding gives the same text on one
# process and with the model split over a tensor group and a pipeline; bad arguments exit 2.
source "$(dirname "$0")/lib.sh"
make_byte_data "$work/data"
"$trainer" train configs/debug/layouts.yaml --set "data.train=$work/data/train_*.bin" --set "checkpoint.dir=$work/ckpt" \
  --set train.steps=30 > "$work/train.log" 2>&1 || fail "training: $(cat "$work/train.log")"
one=$("$trainer" sample "$work/ckpt" --prompt "the whale " --tokens 24 --temperature 0 2>&1) || fail "sample: $one"
[[ "$one" == "the whale "* && ${#one} -gt 20 ]] || fail "unexpected sample: $one"
split=$("${MPIEXEC[@]}" -n 4 "$trainer" sample "$work/ckpt" --prompt "the whale " --tokens 24 --temperature 0 \
  --set parallel.tensor=2 --set parallel.pipeline=2 2>&1) || fail "sample on 4 ranks: $split"
[[ "$one" == "$split" ]] || fail "tensor 2 x pipeline 2 sample differs: '$one' vs '$split'"
rc=0
out=$("$trainer" sample "$work/ckpt" --tokens 0 2>&1) || rc=$?
[[ $rc == 2 && "$out" == *"--tokens: Value 0 not in range 1 to "* ]] || fail "bad --tokens: rc $rc: $out"
rc=0
out=$("$trainer" sample "$work/nothing" 2>&1) || rc=$?
[[ $rc == 2 && "$out" == *"$work/nothing"* ]] || fail "missing checkpoint: rc $rc: $out"
echo "PASS: $one"
