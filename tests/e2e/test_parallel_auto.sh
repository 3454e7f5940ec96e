#!/usr/bin/env bash
# parallel: auto chooses the layout at start: `validate --world 8` prints the same choice the
# 8-rank run reports and trains with (the same layout; the modelled times follow the threads); the checkpoint's resolved recipe holds the chosen
# degrees; a resume on 4 ranks chooses anew for 4 and continues from the checkpoint; a fixed
# degree is kept; parallel.auto_bench times the best candidates on the job and keeps the
# fastest; auto combined with what needs a fixed degree, or with no layout that fits, is
# refused with exit 2.
source "$(dirname "$0")/lib.sh"
make_byte_data "$work/data"
common=(configs/debug/layouts.yaml --set parallel=auto --set "data.train=$work/data/train_*.bin"
        --set "checkpoint.dir=$work/ckpt" --set train.steps=6)

"$trainer" validate "${common[@]}" --world 8 > "$work/validate.txt" || fail "validate: $(cat "$work/validate.txt")"
choice=$(grep -m1 "parallel: auto chose" "$work/validate.txt" | sed 's/^# //')
[[ -n "$choice" ]] || fail "validate printed no choice: $(cat "$work/validate.txt")"
grep -q "^#   runner-up 2: " "$work/validate.txt" || fail "no runners-up: $(cat "$work/validate.txt")"
read -r d t p z < <(sed -E 's/.*data ([0-9]+) x tensor ([0-9]+) x pipeline ([0-9]+), zero ([0-9]).*/\1 \2 \3 \4/' <<< "$choice")
[[ $((d * t * p)) == 8 ]] || fail "the choice is not 8 ranks: $choice"
grep -q "^  data: $d$" "$work/validate.txt" || fail "the resolved recipe does not hold data $d"

"${MPIEXEC[@]}" -n 8 "$trainer" train "${common[@]}" --stop-at 3 > "$work/run8.log" 2>&1 || fail "8 ranks: $(cat "$work/run8.log")"
# The layout must agree; the modelled times may not (the CPU's peak follows OMP_NUM_THREADS).
grep -qF "${choice%% on *} on 8 x cpu" "$work/run8.log" || fail "the run chose otherwise than validate ($choice): $(cat "$work/run8.log")"
manifest="$work/ckpt/step_00000003/manifest.yaml"
grep -q "data: $d, tensor: $t, pipeline: $p, zero: $z" "$manifest" \
  || fail "manifest layout: $(grep -A2 layout "$manifest")"
sed -n '/^recipe:/,$p' "$manifest" | grep -q "^    data: $d$" || fail "the manifest's recipe lacks data $d"

"${MPIEXEC[@]}" -n 4 "$trainer" train "${common[@]}" > "$work/run4.log" 2>&1 || fail "4 ranks: $(cat "$work/run4.log")"
grep -q "parallel: auto chose .* on 4 x cpu" "$work/run4.log" || fail "no choice for 4 ranks: $(cat "$work/run4.log")"
grep -q "resuming from .*step_00000003" "$work/run4.log" || fail "4 ranks did not resume: $(cat "$work/run4.log")"
grep -q "step      6/6" "$work/run4.log" || fail "4 ranks did not finish: $(cat "$work/run4.log")"
# A resume on the same world keeps the checkpoint's layout instead of choosing anew.
"${MPIEXEC[@]}" -n 4 "$trainer" train "${common[@]}" --set train.steps=8 > "$work/run4b.log" 2>&1 \
  || fail "4 ranks again: $(cat "$work/run4b.log")"
layout4=$(sed -nE 's/.*saved with (data [0-9]+ x tensor [0-9]+ x pipeline [0-9]+, zero [0-9]).*/\1/p' "$work/run4b.log")
grep -q "parallel: auto keeps $layout4 from .*step_00000006" "$work/run4b.log" \
  || fail "the resume on 4 ranks did not keep the checkpoint's layout ($layout4): $(cat "$work/run4b.log")"
! grep -q "parallel: auto chose" "$work/run4b.log" || fail "the resume chose anew: $(cat "$work/run4b.log")"

# auto_bench 2: the two best modelled candidates are timed on the job and the faster is kept.
"${MPIEXEC[@]}" -n 4 "$trainer" train configs/debug/layouts.yaml --set parallel=auto --set parallel.auto_bench=2 \
  --set "data.train=$work/data/train_*.bin" --set "checkpoint.dir=$work/bench" --set train.steps=2 \
  > "$work/bench.log" 2>&1 || fail "auto_bench: $(cat "$work/bench.log")"
[[ $(grep -c "^  auto_bench [12]: data .*: measured [0-9.e-]* s/step (modelled" "$work/bench.log") == 2 ]] \
  || fail "auto_bench did not time 2 candidates: $(cat "$work/bench.log")"
kept=$(sed -nE 's/^parallel: auto_bench kept (.*): the fastest measured of 2 timed$/\1/p' "$work/bench.log")
[[ -n "$kept" ]] || fail "no auto_bench verdict: $(cat "$work/bench.log")"
grep -q "auto_bench [12]: $kept: " "$work/bench.log" || fail "kept a layout that was not timed: $kept"
grep -q "saved with data\|step      2/2" "$work/bench.log" || fail "auto_bench run did not train: $(cat "$work/bench.log")"
"$trainer" validate configs/debug/layouts.yaml --set parallel.auto_bench=2 | grep -q "parallel.auto_bench 2 times candidates only for auto degrees" \
  || fail "no note for auto_bench without auto"

# A fixed degree stays; the others are chosen around it.
"$trainer" validate configs/debug/layouts.yaml --set parallel=auto --set parallel.tensor=2 --world 8 > "$work/fixed.txt"
grep -Eq "parallel: auto chose data [0-9]+ x tensor 2 x" "$work/fixed.txt" || fail "tensor 2 not kept: $(head -3 "$work/fixed.txt")"

expect_exit2 "parallel.stages: layers per stage need a fixed parallel.pipeline" \
  "$trainer" validate configs/debug/layouts.yaml --set parallel.pipeline=auto --set "parallel.stages=[2,2]"
expect_exit2 "give --world N" "$trainer" plan configs/debug/layouts.yaml --set parallel=auto
expect_exit2 "none of the" "$trainer" plan configs/debug/layouts.yaml --set parallel=auto --world 8 --memory 0.001
expect_exit2 "parallel.data: expected an integer" "$trainer" validate configs/debug/layouts.yaml --set parallel.data=automatic
echo "PASS: $choice"
