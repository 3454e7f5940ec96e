#!/usr/bin/env bash
# trainer ckpt inspect and export on a 2-rank (tensor 2) checkpoint, checked by /usr/bin/python3
# reading the raw bytes (no safetensors package on this machine), the reference values
# assembled straight from the rank files by the manifest's pieces:
# - inspect --state all: step, layout, files ok, every tensor's shape, dtype and the L2 norms
#   of master, adam_m and adam_v;
# - safetensors: the header has every HF GPT-2 tensor with dtype F32, its shape, and
#   contiguous, non-overlapping offsets covering the data exactly; the values are the master
#   weights (Conv1D weights transposed, vocabulary padding dropped);
# - llm.c: the version 3 header and the master weights in llm.c's order;
# - a corrupted checkpoint exports nothing and exits 2 naming the file.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/ckpt_lib.sh"

"${MPIEXEC[@]}" -n 2 "$trainer" train configs/debug/resume.yaml "${data_args[@]}" --set train.steps=6 \
  $(layout_args 1 2 1 0) --set "checkpoint.dir=$work/ckpt" > "$work/train.log" 2>&1 || fail "training: $(cat "$work/train.log")"
ckpt="$work/ckpt/step_00000006"
"$trainer" ckpt export "$work/ckpt" --format safetensors --out "$work/model.safetensors" > "$work/st.log" 2>&1 ||
  fail "safetensors export: $(cat "$work/st.log")"
"$trainer" ckpt export "$ckpt" --format llmc --out "$work/model.bin" > "$work/llmc.log" 2>&1 ||
  fail "llmc export: $(cat "$work/llmc.log")"
grep -q "exported $ckpt (step 6) as safetensors" "$work/st.log" || fail "export message: $(cat "$work/st.log")"
"$trainer" ckpt inspect "$ckpt" --state all > "$work/inspect.log" 2>&1 || fail "inspect: $(cat "$work/inspect.log")"

/usr/bin/python3 - "$ckpt" "$work/model.safetensors" "$work/model.bin" "$work/inspect.log" <<'PY' || fail "python check"
import json, struct, sys, yaml
import numpy as np
ckpt, st_path, llmc_path, inspect_path = sys.argv[1:]
man = yaml.safe_load(open(ckpt + "/manifest.yaml"))
m = man["model"]
L, H, C, V, Vp, T = m["n_layer"], m["n_head"], m["d_model"], m["vocab_size"], m["padded_vocab"], m["max_seq_len"]
assert man["layout"]["tensor"] == 2, man["layout"]

# The checkpoint's master weights, assembled from the rank files by the manifest's pieces.
ours = {  # name -> global (nn.Linear) shape and tensor-parallel split
    "wte.weight": ((Vp, C), "rows"), "wpe.weight": ((T, C), "none")}
for l in range(L):
    h = f"h.{l}."
    ours.update({h + "ln_1.weight": ((C,), "none"), h + "ln_1.bias": ((C,), "none"),
                 h + "attn.c_attn.weight": ((3 * C, C), "qkv"), h + "attn.c_attn.bias": ((3 * C,), "qkv"),
                 h + "attn.c_proj.weight": ((C, C), "cols"), h + "attn.c_proj.bias": ((C,), "none"),
                 h + "ln_2.weight": ((C,), "none"), h + "ln_2.bias": ((C,), "none"),
                 h + "mlp.c_fc.weight": ((4 * C, C), "rows"), h + "mlp.c_fc.bias": ((4 * C,), "rows"),
                 h + "mlp.c_proj.weight": ((C, 4 * C), "cols"), h + "mlp.c_proj.bias": ((C,), "none")})
ours["ln_f.weight"] = ((C,), "none")
ours["ln_f.bias"] = ((C,), "none")
files = [np.fromfile(ckpt + "/" + f["name"], dtype="<f4") for f in man["files"]]

def assemble(name, state):
    shape, split = ours[name]
    full = np.full(shape, np.nan, dtype=np.float32)
    for p in man["pieces"]:
        if p["name"] != name or p["state"] != state:
            continue
        assert p["begin"] == 0, p  # data 1: every piece is a whole tensor-parallel slice
        vals = files[p["file"]][p["offset"] // 4: p["offset"] // 4 + p["end"]]
        r, tp = p["tp_rank"], p["tp"]
        if split == "none" or tp == 1:
            full[...] = vals.reshape(shape)
        elif split == "rows":
            n = shape[0] // tp
            full[r * n:(r + 1) * n] = vals.reshape((n,) + shape[1:])
        elif split == "cols":
            n = shape[1] // tp
            full[:, r * n:(r + 1) * n] = vals.reshape(shape[0], n)
        else:  # q, k, v thirds, each split by rows
            part, n = shape[0] // 3, shape[0] // 3 // tp
            local = vals.reshape((3 * n,) + shape[1:])
            for i in range(3):
                full[i * part + r * n: i * part + (r + 1) * n] = local[i * n:(i + 1) * n]
    assert not np.isnan(full).any(), (name, state)
    return full

master = {name: assemble(name, "master") for name in ours}

# trainer ckpt inspect --state all: step, layout, and every tensor's shape, dtype and norms.
out = open(inspect_path).read()
assert "\nstep: 6 " in out and "layout: data 1 x tensor 2 x pipeline 1 = 2 ranks, zero 0" in out, out
assert out.count(" ok\n") == 2, out
rows = {line.split()[0]: line.split() for line in out.splitlines() if line.startswith("  ") and "[" in line}
assert set(rows) == set(ours), set(rows) ^ set(ours)
for name, (shape, _) in ours.items():
    cols = rows[name]
    assert " ".join(cols[1:-4]) == "[" + ", ".join(map(str, shape)) + "]" and cols[-4] == "f32", cols
    for col, state in zip(cols[-3:], ("master", "adam_m", "adam_v")):
        norm = float(np.sqrt(np.sum(assemble(name, state).astype(np.float64) ** 2)))
        assert abs(float(col) - norm) <= 1e-5 * norm + 1e-30, (name, state, col, norm)

# safetensors: header, dtypes, shapes, offsets.
data = open(st_path, "rb").read()
n = struct.unpack("<Q", data[:8])[0]
assert (8 + n) % 8 == 0, n
text = data[8:8 + n].decode("utf-8")
tail = text[text.rindex("}") + 1:]
assert tail == " " * len(tail), "the header is padded with something other than spaces"
header = json.loads(text)
assert header.pop("__metadata__") == {"format": "pt"}
conv1d = ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")
want = {}
for name, (shape, _) in ours.items():
    if name == "wte.weight":
        want[name] = [V, C]
    elif name.endswith(conv1d):
        want[name] = [shape[1], shape[0]]
    else:
        want[name] = list(shape)
assert set(header) == set(want), set(header) ^ set(want)
spans = []
body = data[8 + n:]
for name, info in header.items():
    assert info["dtype"] == "F32", (name, info)
    assert info["shape"] == want[name], (name, info["shape"], want[name])
    b, e = info["data_offsets"]
    assert e - b == 4 * int(np.prod(want[name])), (name, b, e)
    spans.append((b, e))
    got = np.frombuffer(body[b:e], dtype="<f4").reshape(want[name])
    ref = master[name]
    if name == "wte.weight":
        ref = ref[:V]
    elif name.endswith(conv1d):
        ref = ref.T
    assert np.array_equal(got, ref), name
spans.sort()
assert spans[0][0] == 0 and all(a[1] == b[0] for a, b in zip(spans, spans[1:])), "offsets not contiguous"
assert spans[-1][1] == len(body), (spans[-1], len(body))

# llm.c model file version 3: header, then tensors in llm.c's order, (out, in) layout.
raw = open(llmc_path, "rb").read()
hdr = struct.unpack("<256i", raw[:1024])
assert hdr[:8] == (20240326, 3, T, V, L, H, C, Vp), hdr[:8]
assert not any(hdr[8:])
f = np.frombuffer(raw[1024:], dtype="<f4")
order = [("wte.weight",), ("wpe.weight",)] + [tuple(f"h.{l}.{k}" for l in range(L)) for k in (
    "ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight", "attn.c_proj.bias",
    "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias")] + [
    ("ln_f.weight",), ("ln_f.bias",)]
at = 0
for group in order:
    for name in group:
        size = master[name].size
        assert np.array_equal(f[at:at + size], master[name].ravel()), name
        at += size
assert at == f.size, (at, f.size)
print(f"ok: {len(header)} safetensors tensors and the llm.c file match the checkpoint")
PY

# A corrupted checkpoint: exit 2 naming the file, no output file.
flip_byte "$ckpt/rank_00001.bin" 64
for format in llmc safetensors; do
  rc=0
  "$trainer" ckpt export "$ckpt" --format $format --out "$work/bad.out" > "$work/bad.log" 2>&1 || rc=$?
  [[ $rc == 2 ]] || fail "$format export of a corrupted checkpoint: exit code $rc: $(cat "$work/bad.log")"
  grep -q "rank_00001.bin: checksum mismatch" "$work/bad.log" || fail "$format: $(cat "$work/bad.log")"
  [[ -z "$(ls "$work" | grep bad.out)" ]] || fail "$format: an output file was left: $(ls "$work")"
done
echo "PASS: safetensors and llm.c exports match the checkpoint; a corrupted checkpoint exports nothing"
