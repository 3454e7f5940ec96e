#!/usr/bin/env bash
# trainer sample: generates from a checkpoint; greedy decoding gives the same text on one
# process and with the model split over a tensor group and a pipeline; --logits writes the ids
# and every new token's logits (the greedy choice is each row's argmax, the same text as
# without it); bad arguments exit 2.
source "$(dirname "$0")/lib.sh"
make_byte_data "$work/data"
"$trainer" train configs/debug/layouts.yaml --set "data.train=$work/data/train_*.bin" --set "checkpoint.dir=$work/ckpt" \
  --set train.steps=30 > "$work/train.log" 2>&1 || fail "training: $(cat "$work/train.log")"
one=$("$trainer" sample "$work/ckpt" --prompt "the whale " --tokens 24 --temperature 0 2>&1) || fail "sample: $one"
[[ "$one" == "the whale "* && ${#one} -gt 20 ]] || fail "unexpected sample: $one"
"$trainer" sample "$work/ckpt" --prompt "the whale " --tokens 5 --temperature 0 --logits "$work/logits.json" \
  > "$work/logits.log" 2>&1 || fail "sample --logits: $(cat "$work/logits.log")"
python3 - "$work/logits.json" "$one" <<'PY' || fail "sample --logits: wrong file"
import json, sys
j = json.load(open(sys.argv[1]))
prompt, ids, rows = j["prompt_ids"], j["ids"], j["logits"]
assert prompt == list(b"the whale "), prompt
assert ids[:len(prompt)] == prompt and len(ids) == len(prompt) + 5 and len(rows) == 5, (ids, len(rows))
assert all(len(r) == 257 for r in rows), [len(r) for r in rows]
chosen = ids[len(prompt):]
assert chosen == [max(range(257), key=r.__getitem__) for r in rows], chosen
assert bytes(chosen) == sys.argv[2].encode()[len(prompt):len(prompt) + 5], (chosen, sys.argv[2])
PY
split=$("${MPIEXEC[@]}" -n 4 "$trainer" sample "$work/ckpt" --prompt "the whale " --tokens 24 --temperature 0 \
  --set parallel.tensor=2 --set parallel.pipeline=2 2>&1) || fail "sample on 4 ranks: $split"
[[ "$one" == "$split" ]] || fail "tensor 2 x pipeline 2 sample differs: '$one' vs '$split'"
# On 4 ranks the last stage's leader writes the file: the same ids, the logits to rounding.
"${MPIEXEC[@]}" -n 4 "$trainer" sample "$work/ckpt" --prompt "the whale " --tokens 5 --temperature 0 \
  --set parallel.tensor=2 --set parallel.pipeline=2 --logits "$work/logits4.json" > "$work/logits4.log" 2>&1 ||
  fail "sample --logits on 4 ranks: $(cat "$work/logits4.log")"
python3 - "$work/logits.json" "$work/logits4.json" <<'PY' || fail "sample --logits on 4 ranks differs from one process"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert a["ids"] == b["ids"] and len(a["logits"]) == len(b["logits"]) == 5, (a["ids"], b["ids"])
worst = max(abs(x - y) for r, s in zip(a["logits"], b["logits"]) for x, y in zip(r, s))
assert worst <= 1e-4 * max(abs(x) for r in a["logits"] for x in r), worst
PY
rc=0
out=$("$trainer" sample "$work/ckpt" --tokens 0 2>&1) || rc=$?
[[ $rc == 2 && "$out" == *"--tokens: Value 0 not in range 1 to "* ]] || fail "bad --tokens: rc $rc: $out"
rc=0
out=$("$trainer" sample "$work/nothing" 2>&1) || rc=$?
[[ $rc == 2 && "$out" == *"$work/nothing"* ]] || fail "missing checkpoint: rc $rc: $out"
echo "PASS: $one"
