#!/usr/bin/env bash
# Hostile checkpoint manifests. A real tensor-2 checkpoint of configs/debug/tiny.yaml is copied
# once per case and its manifest.yaml (or a file it names) is tampered with: a file name that
# walks out of the directory ('../../evil.bin', an absolute path) to a copy whose size and
# checksum match (the attack: once, such a file became the weights), duplicate names and ranks,
# ranges beyond a tensor, overlapping and missing pieces, a tensor-parallel rank that does not
# exist, a negative step, huge shapes, a FIFO or a directory for a rank file, a FIFO, /dev/zero
# or 65 MiB for manifest.yaml, ... For each case, `trainer train` resuming from it, `trainer
# ckpt inspect` and `trainer ckpt export` exit 2 within 20 s with a message naming the manifest
# (or the file), the entry and the rule; nothing is trained or exported, and no file outside
# the test's scratch directory changes. A rank file that is a symlink to a regular file is fine.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/ckpt_lib.sh"
trainer=$(realpath "$trainer")
mkdir -p "$work/cwd"
cp configs/debug/tiny.yaml "$work/cwd/tiny.yaml"  # the trainer runs in $work/cwd: relative paths stay in $work
mark_outside

(cd "$work/cwd" && "${MPIEXEC[@]}" -n 2 "$trainer" train tiny.yaml "${data_args[@]}" --set train.steps=2 \
  --set eval.every=0 $(layout_args 1 2 1 0) --set "checkpoint.dir=$work/ckpt" > "$work/base.log" 2>&1) ||
  fail "training: $(cat "$work/base.log")"
good="$work/ckpt/step_00000002"
[[ -f "$good/manifest.yaml" ]] || fail "no checkpoint: $(ls -R "$work/ckpt")"

# edit MANIFEST REGEX REPLACEMENT: the first match of the (Python, multi-line) regex replaced.
edit() {
  /usr/bin/python3 - "$@" <<'PY' || fail "edit $2: no match"
import re, sys
path, pattern, repl = sys.argv[1:]
text = open(path).read()
new, n = re.subn(pattern, repl, text, count=1, flags=re.M)
if n != 1:
    sys.exit(1)
open(path, "w").write(new)
PY
}

# tamper CASE DIR: applies case CASE to the checkpoint copy DIR (its parent's parent is the
# case's own directory, where files "outside the checkpoint" are put).
tamper() {
  local m="$2/manifest.yaml" outside
  outside=$(dirname "$(dirname "$2")")
  case "$1" in
    traversal) mv "$2/rank_00000.bin" "$outside/evil.bin"; edit "$m" 'name: rank_00000.bin' 'name: ../../evil.bin' ;;
    absolute) mv "$2/rank_00001.bin" "$outside/abs.bin"; edit "$m" 'name: rank_00001.bin' "name: $outside/abs.bin" ;;
    dot_dot) edit "$m" 'name: rank_00001.bin' "name: '..'" ;;
    nul_in_name) edit "$m" 'name: rank_00001.bin' 'name: "rank\\0.bin"' ;;
    duplicate_name) edit "$m" 'name: rank_00001.bin' 'name: rank_00000.bin' ;;
    duplicate_rank) edit "$m" '(name: rank_00001.bin, rank:) 1' '\1 0' ;;
    rank_beyond_world) edit "$m" '(name: rank_00001.bin, rank:) 1' '\1 7' ;;
    file_missing_from_list) edit "$m" '^.*name: rank_00001.bin.*\n' '' ;;
    negative_bytes) edit "$m" '(name: rank_00000.bin, rank: 0, bytes:) \d+' '\1 -4' ;;
    negative_step) edit "$m" '^step: \d+' 'step: -5' ;;
    other_format) edit "$m" '^format: 1' 'format: 2' ;;
    negative_position) edit "$m" 'position: \d+' 'position: -1' ;;
    zero_7) edit "$m" 'zero: \d' 'zero: 7' ;;
    stages_too_many_layers) edit "$m" 'stages: \[2\]' 'stages: [3]' ;;
    huge_n_layer) edit "$m" 'n_layer: 2' 'n_layer: 1000000000' ;;
    huge_d_model) edit "$m" 'd_model: 32' 'd_model: 2000000000' ;;
    huge_vocab) edit "$m" 'padded_vocab: 320' 'padded_vocab: 2000000000' ;;
    too_many_params) edit "$m" 'n_layer: 2' 'n_layer: 4096'; edit "$m" 'd_model: 32' 'd_model: 131072' ;;
    range_beyond_tensor) edit "$m" 'end: 5120' 'end: 99999999' ;;
    negative_begin) edit "$m" 'begin: 0' 'begin: -4' ;;
    overlapping_pieces) edit "$m" '(name: wte.weight, state: master, file: 1, offset: 0, split: rows, tp_rank:) 1' '\1 0' ;;
    missing_coverage) edit "$m" 'end: 5120' 'end: 5000' ;;
    tp_rank_5_of_2) edit "$m" '(name: wte.weight, state: master, file: 1, offset: 0, split: rows, tp_rank:) 1' '\1 5' ;;
    tp_degree) edit "$m" 'tp: 2' 'tp: 4' ;;
    file_index_out_of_range) edit "$m" 'file: 0' 'file: 9' ;;
    offset_beyond_file) edit "$m" 'offset: 0' 'offset: 99999999' ;;
    pieces_share_bytes) edit "$m" 'offset: 20480' 'offset: 0' ;;
    unknown_tensor) edit "$m" 'name: wte.weight' 'name: h.99.ln_1.weight' ;;
    wrong_split) edit "$m" 'split: rows' 'split: cols' ;;
    unknown_state) edit "$m" 'state: adam_m' 'state: adam_q' ;;
    fifo_rank_file) rm "$2/rank_00000.bin"; mkfifo "$2/rank_00000.bin" ;;
    directory_rank_file) rm "$2/rank_00000.bin"; mkdir "$2/rank_00000.bin" ;;
    fifo_manifest) rm "$m"; mkfifo "$m" ;;
    dev_zero_manifest) rm "$m"; ln -s /dev/zero "$m" ;;
    huge_manifest) truncate -s 65M "$m" ;;
    symlinked_rank_file) mv "$2/rank_00001.bin" "$2/elsewhere.bin"; ln -s elsewhere.bin "$2/rank_00001.bin" ;;
    *) fail "no case $1" ;;
  esac
}

# CASE|what the message says after "<checkpoint>/" (every manifest rule names manifest.yaml).
cases=(
  "traversal|manifest.yaml: files[0].name '../../evil.bin': a checkpoint file must be a plain name inside its directory"
  "absolute|manifest.yaml: files[1].name '$work/cases/absolute/abs.bin': a checkpoint file must be a plain name"
  "dot_dot|manifest.yaml: files[1].name '..': a checkpoint file must be a plain name"
  "nul_in_name|manifest.yaml: files[1].name 'rank\\x00.bin': a checkpoint file must be a plain name"
  "duplicate_name|manifest.yaml: files[1].name 'rank_00000.bin': also the name of files[0]"
  "duplicate_rank|manifest.yaml: files[1].rank 0: also the rank of files[0]; one file per rank"
  "rank_beyond_world|manifest.yaml: files[1].rank 7: valid: 0 to 1"
  "file_missing_from_list|manifest.yaml: files: entries 1: a checkpoint holds one file per rank"
  "negative_bytes|manifest.yaml: files[0].bytes -4: a file's size must be >= 0"
  "negative_step|manifest.yaml: step -5: a checkpoint's step must be >= 0"
  "other_format|manifest.yaml: checkpoint format 2 is not supported"
  "negative_position|manifest.yaml: loader.position -1: must be >= 0"
  "zero_7|manifest.yaml: layout.zero 7: valid: 0, 1, 2 or 3"
  "stages_too_many_layers|manifest.yaml: layout.stages: layers 3: the stages must hold model.n_layer 2 layers"
  "huge_n_layer|manifest.yaml: model.n_layer 1000000000: must be in [1, 4096]"
  "huge_d_model|manifest.yaml: model.d_model 2000000000: must be in [1, 131072]"
  "huge_vocab|manifest.yaml: model.padded_vocab 2000000000: must be in [1, 16777216]"
  "too_many_params|parameters; at most 1099511627776 (2^40)"
  "range_beyond_tensor|manifest.yaml: pieces[0].end 99999999: valid: begin 0 to 5120"
  "negative_begin|manifest.yaml: pieces[0].begin -4: valid: 0 to 5120"
  "overlapping_pieces|both store these elements of wte.weight (master, tp_rank 0); every element is stored exactly once"
  "missing_coverage|manifest.yaml: pieces [5000, 5120): no piece stores these elements of wte.weight (master, tp_rank 0)"
  "tp_rank_5_of_2|tp_rank 5: valid: 0 to 1 (tensor-parallel degree 2)"
  "tp_degree|manifest.yaml: pieces[0].tp 4: must equal layout.tensor 2"
  "file_index_out_of_range|manifest.yaml: pieces[0].file 9: no such file; valid: 0 to 1"
  "offset_beyond_file|manifest.yaml: pieces[0].offset 99999999: its 20480 bytes must lie within rank_00000.bin"
  "pieces_share_bytes|manifest.yaml: pieces[1].offset 0: its bytes overlap those of pieces[0]"
  "unknown_tensor|manifest.yaml: pieces[0].name 'h.99.ln_1.weight': no such tensor in the manifest's model"
  "wrong_split|manifest.yaml: pieces[0].split cols: tensor wte.weight is split rows"
  "unknown_state|manifest.yaml: pieces[1].state: unknown state 'adam_q'"
  "fifo_rank_file|rank_00000.bin: not a regular file (a FIFO)"
  "directory_rank_file|rank_00000.bin: not a regular file (a directory)"
  "fifo_manifest|manifest.yaml: not a regular file (a FIFO)"
  "dev_zero_manifest|manifest.yaml: not a regular file (a character device)"
  "huge_manifest|manifest.yaml: 68157440 bytes; a checkpoint manifest must be at most 67108864 bytes"
)

# expect_refused LOG WHAT CKPT PATTERN COMMAND...: COMMAND (run in $work/cwd) exits 2 within 20 s
# and its output names CKPT and says PATTERN.
expect_refused() {
  local log=$1 what=$2 ckpt=$3 pattern=$4 rc=0
  shift 4
  (cd "$work/cwd" && timeout 20 "$@") > "$log" 2>&1 || rc=$?
  [[ $rc != 124 ]] || fail "$what: hung (killed after 20 s): $(cat "$log")"
  [[ $rc == 2 ]] || fail "$what: exit code $rc, want 2: $(cat "$log")"
  grep -qF -- "$ckpt" "$log" || fail "$what: the message does not name $ckpt: $(cat "$log")"
  grep -qF -- "$pattern" "$log" || fail "$what: the message does not say '$pattern': $(cat "$log")"
}

resume_args() {  # CASE_DIR: the command line of a run resuming from the case's checkpoint, in resume_cmd
  resume_cmd=("$trainer" train tiny.yaml "${data_args[@]}" --set eval.every=0 --set train.steps=3
              --set "checkpoint.dir=$1/out" --set "checkpoint.resume=$1/a/step_00000002"
              --set "log.metrics=$1/metrics.jsonl")
}

for entry in "${cases[@]}"; do
  name=${entry%%|*}
  pattern=${entry#*|}
  dir="$work/cases/$name"
  ckpt="$dir/a/step_00000002"
  mkdir -p "$dir/a"
  cp -r "$good" "$ckpt"
  tamper "$name" "$ckpt"
  outside_before=$(cd "$dir" && md5sum ./*.bin 2> /dev/null || true)
  resume_args "$dir"
  expect_refused "$dir/train.log" "$name: train" "$ckpt" "$pattern" "${resume_cmd[@]}"
  # The checkpoint folder may hold only the (released, empty) lock of the refused run.
  [[ ! -s "$dir/metrics.jsonl" && -z "$(ls -A "$dir/out" 2> /dev/null | grep -vx '.lock')" && ! -s "$dir/out/.lock" ]] ||
    fail "$name: trained anyway: $(cat "$dir/train.log")"
  expect_refused "$dir/inspect.log" "$name: ckpt inspect" "$ckpt" "$pattern" "$trainer" ckpt inspect "$ckpt"
  expect_refused "$dir/export.log" "$name: ckpt export" "$ckpt" "$pattern" \
    "$trainer" ckpt export "$ckpt" --format safetensors --out "$dir/model.safetensors"
  [[ ! -e "$dir/model.safetensors" ]] || fail "$name: exported anyway"
  [[ "$(cd "$dir" && md5sum ./*.bin 2> /dev/null || true)" == "$outside_before" ]] || fail "$name: a file outside the checkpoint changed"
  echo "ok: $name"
done

# Control: the untouched checkpoint, and one whose rank file is a symlink to a regular file, load.
for name in untouched symlinked_rank_file; do
  dir="$work/cases/$name"
  mkdir -p "$dir/a"
  cp -r "$good" "$dir/a/step_00000002"
  [[ $name == untouched ]] || tamper "$name" "$dir/a/step_00000002"
  resume_args "$dir"
  (cd "$work/cwd" && timeout 60 "${resume_cmd[@]}") > "$dir/train.log" 2>&1 ||
    fail "$name: resume failed: $(cat "$dir/train.log")"
  grep -qF "resuming from $dir/a/step_00000002 (step 2" "$dir/train.log" || fail "$name: did not resume: $(cat "$dir/train.log")"
  (cd "$work/cwd" && timeout 20 "$trainer" ckpt inspect "$dir/a/step_00000002") > "$dir/inspect.log" 2>&1 ||
    fail "$name: inspect failed: $(cat "$dir/inspect.log")"
  echo "ok: $name"
done

expect_outside_unchanged
echo "PASS: ${#cases[@]} hostile checkpoints exit 2 naming the manifest, the entry and the rule"
