#!/usr/bin/env bash
# scripts/plot_metrics.py renders a PNG from metrics files: a real run's file (training records,
# evaluations, a skipped bad step) overlaid with a second run; the image is a PNG of the
# figure's size (800 x 1100 pixels) with content; a file that is not JSON lines is refused
# naming its line. Skipped (77) where Debian's python3-matplotlib is missing.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/ckpt_lib.sh"
mark_outside
py=/usr/bin/python3
$py -c "import matplotlib" 2>/dev/null || { echo "SKIP: no python3-matplotlib"; exit 77; }

TRAINER_FAULT_NAN_STEP=4 "$trainer" train configs/debug/resume.yaml "${data_args[@]}" --set train.steps=8 \
  --set checkpoint.dir= --set checkpoint.every=0 --set eval.every=4 --set eval.batches=2 --set train.on_nonfinite=skip \
  --set "log.metrics=$work/a.jsonl" > "$work/a.log" 2>&1 || fail "run a: $(cat "$work/a.log")"
grep -q '"event": "nonfinite"' "$work/a.jsonl" || fail "run a logged no event"
grep -q '"val_loss"' "$work/a.jsonl" || fail "run a logged no evaluation"
# A second run as another tool might leave it: blended validation losses, no MFU.
for s in 1 2 3 4 5 6; do
  echo "{\"step\": $s, \"loss\": $((7 - s)).5, \"lr\": 0.001, \"grad_norm\": 1.5, \"tokens_per_s\": 900, \"elapsed_s\": $s}"
done > "$work/b.jsonl"
echo '{"step": 6, "val_loss": 1.9, "val_loss_web": 2.1, "val_loss_code": 1.7, "eval_s": 0.5}' >> "$work/b.jsonl"

out=$($py scripts/plot_metrics.py "$work/a.jsonl" "$work/b.jsonl" --out "$work/plots/run.png") || fail "plot failed"
[[ "$out" == "$work/plots/run.png" ]] || fail "printed '$out', want the PNG's path"
[[ "$(head -c 8 "$work/plots/run.png" | od -An -tx1 | tr -d ' \n')" == 89504e470d0a1a0a ]] || fail "not a PNG"
size=$($py -c "import struct,sys; d=open(sys.argv[1],'rb').read(24); print(*struct.unpack('>II', d[16:24]))" "$work/plots/run.png")
[[ "$size" == "800 1100" ]] || fail "PNG is $size pixels, want 800 1100"
bytes=$(stat -c %s "$work/plots/run.png")
(( bytes > 30000 )) || fail "PNG of $bytes bytes: too small to hold five panels of curves"

# Default output: beside the first file.
[[ "$($py scripts/plot_metrics.py "$work/b.jsonl")" == "$work/b.png" && -s "$work/b.png" ]] || fail "default output"
echo '{"step": 1, "loss": 2' > "$work/bad.jsonl"
rc=0
$py scripts/plot_metrics.py "$work/bad.jsonl" --out "$work/bad.png" 2> "$work/bad.log" || rc=$?
[[ $rc != 0 ]] && grep -q "bad.jsonl:1: not JSON" "$work/bad.log" || fail "malformed file: rc $rc: $(cat "$work/bad.log")"
expect_outside_unchanged
echo "PASS: a ${bytes}-byte 800x1100 PNG of two runs (evaluations, blended sources and a bad-step event)"
