#!/usr/bin/env bash
# Ranks that disagree: two ranks started by one mpiexec (MPMD) with different settings stop
# before any work with exit code 2 and one message naming the first differing key, rank 0's
# value and the other's, and the ranks that differ; the same settings on both ranks train.
# Ranks that run different subcommands (train beside validate, which never used to enter MPI
# and left train waiting) stop the same way, naming each rank's subcommand.
# One row per case: expected message (extended regex) | rank 0's --set | rank 1's --set.
source "$(dirname "$0")/lib.sh"
mark_outside
make_byte_data "$work/data"
base=(configs/debug/tiny.yaml --set "data.train=$work/data/train_*.bin" --set "data.val=$work/data/val_*.bin"
      --set parallel.data=2 --set log.metrics=)
cases=(
  "rank 1 has train.optimizer.lr: 0.001 vs 0.002|train.optimizer.lr=0.001|train.optimizer.lr=0.002"
  "rank 1 has train.seed: 1 vs 2|train.seed=1|train.seed=2"
  "rank 1 has train.steps: 3 vs 4|train.steps=3|train.steps=4"
  "rank 1 has model.d_model: 32 vs 64|model.d_model=32|model.d_model=64"
  "rank 1 has checkpoint.dir: \"$work/a\" vs \"$work/b\"|checkpoint.dir=$work/a|checkpoint.dir=$work/b"
  "rank 1 has data.train: \".*/data/train_\\*.bin\" vs \".*/nowhere_\\*.bin\"|log.every=1|data.train=$work/nowhere_*.bin"
)
n=0
for row in "${cases[@]}"; do
  IFS='|' read -r want set0 set1 <<< "$row"
  rc=0
  timeout 120 "${MPIEXEC[@]}" -n 1 "$trainer" train "${base[@]}" --set "$set0" : \
    -n 1 "$trainer" train "${base[@]}" --set "$set1" > "$work/out.log" 2>&1 || rc=$?
  [[ $rc == 2 ]] || fail "'$set0' vs '$set1': exit code $rc, want 2: $(cat "$work/out.log")"
  grep -Eq -- "^error: the ranks of this job run different recipes or programs: $want \(rank 0's value first\); ranks differing from rank 0: 1;" \
    "$work/out.log" || fail "'$set0' vs '$set1': want /$want/, got: $(cat "$work/out.log")"
  [[ $(grep -c "^error:" "$work/out.log") == 1 ]] || fail "'$set0' vs '$set1': the error is not printed once: $(cat "$work/out.log")"
  ! grep -q "^step " "$work/out.log" || fail "'$set0' vs '$set1': trained anyway"
  ! grep -qi "segmentation\|signal\|MPI_ABORT" "$work/out.log" || fail "'$set0' vs '$set1': unclean exit: $(cat "$work/out.log")"
  [[ ! -e "$work/a" && ! -e "$work/b" ]] || fail "'$set0' vs '$set1': a checkpoint folder was created"
  n=$((n + 1))
done
# One row per pair of subcommands: rank 0's arguments | rank 1's arguments.
recipe=("${base[@]}")
commands=(
  "train ${recipe[*]}|validate ${recipe[*]}"
  "validate ${recipe[*]}|train ${recipe[*]}"
  "train ${recipe[*]}|bench ${recipe[*]}"
  "train ${recipe[*]}|plan configs/debug/tiny.yaml"
  "train ${recipe[*]}|ckpt inspect $work/none"
  "data prepare --input $work/data/text.txt --tokenizer byte --out $work/p --quiet|train ${recipe[*]}"
)
for row in "${commands[@]}"; do
  IFS='|' read -r args0 args1 <<< "$row"
  read -r -a a0 <<< "$args0"
  read -r -a a1 <<< "$args1"
  name0="${a0[0]}" name1="${a1[0]}"
  [[ "${a0[0]}" == data || "${a0[0]}" == ckpt ]] && name0="${a0[0]} ${a0[1]}"
  [[ "${a1[0]}" == data || "${a1[0]}" == ckpt ]] && name1="${a1[0]} ${a1[1]}"
  rc=0
  timeout 120 "${MPIEXEC[@]}" -n 1 "$trainer" "${a0[@]}" : -n 1 "$trainer" "${a1[@]}" > "$work/out.log" 2>&1 || rc=$?
  [[ $rc == 2 ]] || fail "$name0 beside $name1: exit code $rc, want 2: $(cat "$work/out.log")"
  grep -q "^error: the ranks of this job run different commands: rank 0 runs \`trainer $name0\`, rank 1 runs \`trainer $name1\`; ranks differing from rank 0: 1;" \
    "$work/out.log" || fail "$name0 beside $name1: $(cat "$work/out.log")"
  [[ $(grep -c "^error:" "$work/out.log") == 1 ]] || fail "$name0 beside $name1: the error is not printed once: $(cat "$work/out.log")"
  ! grep -q "^step \|^# \|^done" "$work/out.log" || fail "$name0 beside $name1: a command ran anyway: $(cat "$work/out.log")"
  [[ ! -e "$work/p" ]] || fail "$name0 beside $name1: data prepare wrote its folder"
  n=$((n + 1))
done
# The control: the same settings on both ranks (given the MPMD way) train.
"${MPIEXEC[@]}" -n 1 "$trainer" train "${base[@]}" --set train.seed=3 : -n 1 "$trainer" train "${base[@]}" \
  --set train.seed=3 > "$work/same.log" 2>&1 || fail "same settings: $(cat "$work/same.log")"
grep -q "^done: 4 steps" "$work/same.log" || fail "same settings did not train: $(cat "$work/same.log")"
expect_outside_unchanged
echo "PASS: $n disagreements (recipes and subcommands) refused with exit code 2 naming them and the ranks; agreeing ranks train"
