#!/usr/bin/env bash
# A weighted blend of two sources (one small enough to roll over every few steps) resumes
# exactly: single process and 3D (data 2 x tensor 2 x pipeline 2, ZeRO-1), saved at step 4 and
# resumed, continues with the losses and final checkpoint files of an uninterrupted 8-step
# run; the manifest holds every source's epoch and position; evaluation reports a val loss per
# source and their weighted mean, in the progress line and the metrics; a stage change is
# printed and recorded in the metrics.
source "$(dirname "$0")/lib.sh"
make_byte_data "$work/web"
mkdir -p "$work/small"
awk 'BEGIN { srand(11); split("ahoy ye harpoon deck mast sail rope tide", w, " ");
       for (d = 0; d < 6; d++) { for (l = 0; l < 2; l++) { line = "";
         for (k = 0; k < 9; k++) line = line w[int(rand() * 8) + 1] " "; print line } print "\n\n\n" } }' \
  > "$work/small/text.txt"
"$trainer" data prepare --input "$work/small/text.txt" --tokenizer byte --out "$work/small" --val-fraction 0.34 \
  --quiet > /dev/null
blend="[{path: \"$work/web/train_*.bin\", weight: 1, name: web}, {path: \"$work/small/train_*.bin\", weight: 1}]"
val="[{path: \"$work/web/val_*.bin\", weight: 3, name: web}, {path: \"$work/small/val_*.bin\", weight: 1, name: small}]"

run() {  # ranks d t p z name [stop_at]
  local n=$1 name=$6 stop=${7:-}
  "${MPIEXEC[@]}" -n "$n" "$trainer" train configs/debug/layouts.yaml $(layout_args $2 $3 $4 $5) --set train.steps=8 \
    --set "data.train=$blend" --set "data.val=$val" --set eval.every=4 --set eval.batches=4 \
    --set "checkpoint.dir=$work/$name" --set "log.metrics=$work/$name.jsonl" ${stop:+--stop-at $stop} \
    > "$work/$name-$stop.log" 2>&1 || fail "run $name $stop: $(cat "$work/$name-$stop.log")"
}

check_layout() {  # ranks d t p z tag
  local tag=$6 lay=("${@:1:5}")
  run "${lay[@]}" "a$tag"
  run "${lay[@]}" "b$tag" 4
  run "${lay[@]}" "b$tag"
  grep -q "resuming from .*step_00000004" "$work/b$tag-.log" || fail "$tag: no resume: $(cat "$work/b$tag-.log")"
  diff <(losses "$work/a$tag.jsonl" | awk '$1 > 4') <(losses "$work/b$tag.jsonl" | awk '$1 > 4') \
    || fail "$tag: losses differ after step 4"
  for f in "$work/a$tag"/step_00000008/rank_*.bin; do
    cmp "$f" "$work/b$tag/step_00000008/$(basename "$f")" || fail "$tag: final state differs in $(basename "$f")"
  done
  # The small source (about 26 samples, half of 16 draws a step) has rolled over by step 4.
  grep -Eq "path: .*small/train_\*\.bin, epoch: [1-9]" "$work/b$tag/step_00000004/manifest.yaml" \
    || fail "$tag: no rolled-over source state in the manifest: $(grep -A8 loader "$work/b$tag/step_00000004/manifest.yaml")"
  grep -Eq "val loss [0-9.]+ \(web [0-9.]+, small [0-9.]+\)" "$work/a$tag-.log" \
    || fail "$tag: no per-source val loss line: $(grep 'val loss' "$work/a$tag-.log")"
  echo "$tag: $(grep -m1 'val loss' "$work/a$tag-.log")"
}
check_layout 1 1 1 1 0 single
check_layout 8 2 2 2 1 3d

# The metrics' mean is the weighted mean of the per-source losses (weights 3 and 1).
python3 - "$work/asingle.jsonl" <<'PY' || fail "val_loss is not the weighted mean of the sources"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"val_loss"' in l]
assert len(rows) == 3, rows  # steps 0, 4 and 8
for r in rows:
    mean = (3 * r["val_loss_web"] + r["val_loss_small"]) / 4
    assert abs(r["val_loss"] - mean) <= 1e-6 * abs(mean), r
    assert r["val_loss_web"] != r["val_loss_small"], r
print("weighted means ok:", [round(r["val_loss"], 4) for r in rows])
PY
# A stage: steps 1-2 on the small source alone, then the blend; each change printed and recorded.
"$trainer" train configs/debug/layouts.yaml --set train.steps=4 --set "data.train=$blend" \
  --set "data.stages=[{until_step: 2, train: [{path: \"$work/small/train_*.bin\"}]}]" \
  --set "checkpoint.dir=$work/stages" --set "log.metrics=$work/stages.jsonl" > "$work/stages.log" 2>&1 \
  || fail "stages run: $(cat "$work/stages.log")"
grep -q "step      1 | data stage 0 of 1: small 1$" "$work/stages.log" || fail "no stage 0 line: $(cat "$work/stages.log")"
grep -q "step      3 | data stage 1 of 1: web 0.5, small 0.5$" "$work/stages.log" || fail "no stage 1 line: $(cat "$work/stages.log")"
[[ $(grep -c '"data_stage"' "$work/stages.jsonl") == 2 ]] || fail "want 2 data_stage records: $(cat "$work/stages.jsonl")"
grep -q '"step": 3, "data_stage": 1, "mix": "web 0.5, small 0.5"' "$work/stages.jsonl" || fail "stage record: $(cat "$work/stages.jsonl")"

echo "PASS: a 2-source blend resumes exactly (1 rank and 2x2x2, with rollovers) and evaluates per source"
