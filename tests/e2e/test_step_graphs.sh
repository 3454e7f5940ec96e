#!/usr/bin/env bash
# train.graphs: step end to end on the CPU (which records each micro-batch's ops and replays
# them, as CUDA replays a captured graph): GPT-2 with 2 micro-batches per step and evaluation
# between steps, recomputed blocks, 3 micro-batches, ZeRO 1 and Llama train to checkpoints
# byte-identical to the eager run's (parameters, optimizer state), the done line counts the
# replays, bench reports them, and the layouts a graph cannot hold exit 2.
source "$(dirname "$0")/lib.sh"
make_byte_data "$work/data"
common=(--set "data.train=$work/data/train_*.bin" --set "data.val=$work/data/val_*.bin" --set train.steps=6)

run() {  # run NAME GRAPHS RECIPE ARGS...: train into $work/NAME_GRAPHS
  local name="$1" graphs="$2" recipe="$3"
  shift 3
  "$trainer" train "$recipe" "${common[@]}" --set "train.graphs=$graphs" --set "checkpoint.dir=$work/${name}_$graphs" \
    --set "log.metrics=$work/${name}_$graphs.jsonl" "$@" >"$work/${name}_$graphs.log" 2>&1 ||
    fail "$name with train.graphs=$graphs: $(cat "$work/${name}_$graphs.log")"
}
# same NAME REPLAYS: the eager and graphed runs' checkpoints are the same bytes, and the graphed
# run replayed REPLAYS micro-batches.
same() {
  local name="$1" replays="$2" f n=0
  for f in $(cd "$work/${name}_off" && find . -name '*.bin' | sort); do
    cmp -s "$work/${name}_off/$f" "$work/${name}_step/$f" || fail "$name: $f differs between train.graphs off and step"
    n=$((n + 1))
  done
  (( n > 0 )) || fail "$name: no checkpoint files in $work/${name}_off"
  same_losses "$(losses "$work/${name}_step.jsonl")" "$(losses "$work/${name}_off.jsonl")" 0 || fail "$name: losses differ"
  grep -q "^train.graphs: step: .*, $replays replays$" "$work/${name}_step.log" ||
    fail "$name: want $replays replays: $(grep 'train.graphs' "$work/${name}_step.log")"
  ! grep -q "^train.graphs" "$work/${name}_off.log" || fail "$name: the eager run reports graphs"
  echo "ok: $name: $n checkpoint file(s) byte-identical; $(grep '^train.graphs' "$work/${name}_step.log")"
}

# 6 steps x 2 micro-batches: each kind (the step's last, the others) runs eagerly once, is
# captured and replayed at step 2, replayed after: 10 replays.
for g in off step; do run gpt2 "$g" configs/debug/tiny.yaml; done
same gpt2 10
grep -q "2 micro-batches eager, 2 graphs captured" "$work/gpt2_step.log" || fail "gpt2: $(grep graphs "$work/gpt2_step.log")"
for g in off step; do run recompute "$g" configs/debug/tiny.yaml --set train.recompute=block; done
same recompute 10
for g in off step; do run three "$g" configs/debug/tiny.yaml --set train.global_batch=6; done
same three 16
for g in off step; do run zero1 "$g" configs/debug/tiny.yaml --set parallel.zero=1; done
same zero1 10
for g in off step; do run llama "$g" configs/debug/tiny-llama.yaml; done
same llama 10

# bench: the counts in the JSON and the report's graphs line.
out=$("$trainer" bench configs/debug/tiny.yaml --set train.graphs=step --steps 3 --warmup 1 --json) || fail "bench: $out"
grep -q '"graphs": {"eager": 2, "captures": 2, "replays": 6, "max_nodes": [1-9][0-9]*}' <<<"$out" || fail "bench JSON: $out"
# A replay is forward and backward in one: no split (null), their sum in forward_backward_s.
/usr/bin/python3 -c "import json,sys; d=json.loads(sys.argv[1])
assert d['forward_s'] is None and d['backward_s'] is None and 0 < d['forward_backward_s'] <= d['step_s'], d" "$out" \
  || fail "bench JSON passes under graphs: $out"
out=$("$trainer" bench configs/debug/tiny.yaml --steps 1 --json) || fail "bench: $out"
grep -q '"graphs": null' <<<"$out" || fail "bench JSON without graphs: $out"
out=$("$trainer" bench configs/debug/tiny.yaml --set train.graphs=step --steps 2 --warmup 1) || fail "bench: $out"
grep -q "forward+backward .* (graph replays)" <<<"$out" || fail "bench report: $out"
grep -q "graphs       2 micro-batches eager, 2 graphs captured" <<<"$out" || fail "bench report: $out"

expect_exit2 "train.graphs: step captures one process's whole micro-batch, but parallel is data 2" \
  "$trainer" validate configs/debug/tiny.yaml --set train.graphs=step --set parallel.data=2
expect_exit2 "train.graphs: step with parallel.zero 2" \
  "$trainer" validate configs/debug/tiny.yaml --set train.graphs=step --set parallel.zero=2
expect_exit2 "train.graphs: unknown value \"always\"; valid: one of: off, step" \
  "$trainer" validate configs/debug/tiny.yaml --set train.graphs=always
expect_exit2 "valid: --set train.graphs=off with --profile" \
  "$trainer" bench configs/debug/tiny.yaml --set train.graphs=step --profile --steps 1
echo "PASS: train.graphs: step trains the eager run's bits; bench reports it; unsupported layouts exit 2"
