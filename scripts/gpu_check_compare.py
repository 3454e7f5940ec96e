#!/usr/bin/env python3
"""Comparisons and report parsing for scripts/gpu_check.sh (standard library only).

Every subcommand prints one short result line (the last line of its output is what
gpu_check.sh puts into its summary) and exits 0 when the check passes, 1 when it fails, 2 on
a usage error or an unreadable input.

  losses REF OTHER [--rtol R]       every step's loss agrees to R relative (default 1e-4)
  bf16 BF16 FP32 [--rtol R]         bf16 losses finite, falling, last within R of fp32's (0.02)
  identical A B                     loss values bit-identical (the JSON text of every loss)
  table OUT.tsv NAME=FILE...        merge metrics files into one TSV: step, one loss column each
  bench STDOUT JSON_OUT PROFILE_OUT LABEL
                                    the JSON line of `trainer bench --json [--profile]` ->
                                    JSON_OUT; its "profile" field (and any text lines) rendered
                                    as a table -> PROFILE_OUT; a one-line summary
  resources OUT.tsv [--ptxas LOG] [FILE...]
                                    `cuobjdump --dump-resource-usage` text (files, or stdin) and/or
                                    the `ptxas -v` lines of a build log -> TSV kernel, registers,
                                    shared, stack, local, spill stores, spill loads; the count of
                                    kernels that spill (ptxas), else of those using stack/local
                                    memory (spills or local arrays: cuobjdump cannot tell)

Metrics files are trainer's log.metrics JSON lines; train records carry "step" and "loss"
(null when not finite), evaluation records carry "val_loss" and are ignored.
"""
import json
import math
import os
import re
import shutil
import subprocess
import sys

LOSS_RE = re.compile(r'"loss":\s*([^,}\s]+)')


def die(msg):
    print(f"error: {msg}")
    sys.exit(2)


def read_losses(path):
    """[(step, loss float or nan, loss text)] of the train records of a metrics file."""
    try:
        lines = open(path).read().splitlines()
    except OSError as e:
        die(f"cannot read {path}: {e.strerror}")
    out = []
    for line in lines:
        line = line.strip()
        if not line:
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            die(f"{path}: not a JSON line: {line[:80]}")
        if "loss" not in rec:
            continue
        m = LOSS_RE.search(line)
        text = m.group(1) if m else repr(rec["loss"])
        v = rec["loss"]
        value = float(v) if isinstance(v, (int, float)) else math.nan
        out.append((int(rec["step"]), value, text))
    if not out:
        die(f"{path}: no train records (no \"loss\")")
    return out


def opt(args, name, default):
    if name in args:
        i = args.index(name)
        if i + 1 >= len(args):
            die(f"{name} needs a value")
        value = float(args[i + 1])
        del args[i:i + 2]
        return value
    return default


def cmd_losses(args):
    rtol = opt(args, "--rtol", 1e-4)
    if len(args) != 2:
        die("usage: losses REF OTHER [--rtol R]")
    ref, other = read_losses(args[0]), read_losses(args[1])
    if [s for s, _, _ in ref] != [s for s, _, _ in other]:
        print(f"FAIL: different steps logged: {len(ref)} vs {len(other)} records "
              f"(last steps {ref[-1][0]} vs {other[-1][0]})")
        return 1
    worst, worst_step = 0.0, ref[0][0]
    for (step, a, _), (_, b, _) in zip(ref, other):
        if not (math.isfinite(a) and math.isfinite(b)):
            print(f"FAIL: loss not finite at step {step}: {a} vs {b}")
            return 1
        rel = abs(a - b) / max(abs(a), 1e-30)
        if rel > worst:
            worst, worst_step = rel, step
    s, a, b = worst_step, dict((s, v) for s, v, _ in ref)[worst_step], dict((s, v) for s, v, _ in other)[worst_step]
    if worst > rtol:
        print(f"FAIL: worst step {s}: {a:.7g} vs {b:.7g} (rel {worst:.2g} > {rtol:g}); {len(ref)} steps")
        return 1
    print(f"{len(ref)} steps agree to {rtol:g} (worst rel {worst:.2g} at step {s}; loss {ref[0][1]:.4f} -> "
          f"{ref[-1][1]:.4f})")
    return 0


def cmd_bf16(args):
    rtol = opt(args, "--rtol", 0.02)
    if len(args) != 2:
        die("usage: bf16 BF16 FP32 [--rtol R]")
    bf, fp = read_losses(args[0]), read_losses(args[1])
    for step, v, _ in bf:
        if not math.isfinite(v):
            print(f"FAIL: bf16 loss not finite at step {step}")
            return 1
    first, last = bf[0][1], bf[-1][1]
    if not last < first:
        print(f"FAIL: bf16 loss not falling: step {bf[0][0]} {first:.4f} -> step {bf[-1][0]} {last:.4f}")
        return 1
    fp_by_step = {s: v for s, v, _ in fp}
    step = bf[-1][0]
    if step not in fp_by_step or not math.isfinite(fp_by_step[step]):
        print(f"FAIL: no finite fp32 loss at step {step} to compare with")
        return 1
    ref = fp_by_step[step]
    rel = abs(last - ref) / max(abs(ref), 1e-30)
    if rel > rtol:
        print(f"FAIL: bf16 step {step} loss {last:.4f} vs fp32 {ref:.4f} ({100 * rel:.2f}% > {100 * rtol:g}%)")
        return 1
    print(f"bf16 finite, falling {first:.4f} -> {last:.4f}; step {step} within {100 * rel:.2f}% of fp32 "
          f"{ref:.4f} (limit {100 * rtol:g}%)")
    return 0


def cmd_identical(args):
    if len(args) != 2:
        die("usage: identical A B")
    a, b = read_losses(args[0]), read_losses(args[1])
    for (sa, _, ta), (sb, _, tb) in zip(a, b):
        if sa != sb or ta != tb:
            print(f"FAIL: first difference at step {sa}: loss {ta} vs {tb} "
                  f"(`trainer bench --profile` lists the ops of a step, to narrow it down)")
            return 1
    if len(a) != len(b):
        print(f"FAIL: {len(a)} vs {len(b)} train records")
        return 1
    print(f"{len(a)} losses bit-identical over two runs (last {a[-1][2]})")
    return 0


def cmd_table(args):
    if len(args) < 2:
        die("usage: table OUT.tsv NAME=FILE...")
    cols, data = [], {}
    for spec in args[1:]:
        name, _, path = spec.partition("=")
        if not os.path.isfile(path):
            continue  # a run that did not happen: no column
        records = read_losses(path)
        cols.append(name)
        for step, _, text in records:
            data.setdefault(step, {})[name] = text
    with open(args[0], "w") as f:
        f.write("\t".join(["step"] + cols) + "\n")
        for step in sorted(data):
            f.write("\t".join([str(step)] + [data[step].get(c, "") for c in cols]) + "\n")
    print(f"{len(data)} steps x {len(cols)} runs -> {args[0]}")
    return 0


def gib(v):
    return f"{v / 2**30:.1f} GiB"


def render_profile(prof):
    """Text table of a bench "profile" field of unknown exact shape; (lines, top-3 note)."""
    rows = []
    if isinstance(prof, dict):
        for k, v in prof.items():
            if isinstance(v, dict):
                rows.append({"op": k, **v})
            elif isinstance(v, (int, float)):
                rows.append({"op": k, "value": v})
            else:
                rows.append({"op": k, "value": json.dumps(v)})
    elif isinstance(prof, list):
        for v in prof:
            rows.append(v if isinstance(v, dict) else {"value": v})
    else:
        return [json.dumps(prof)], ""
    if not rows:
        return ["(empty profile)"], ""
    cols = []
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    numeric = [c for c in cols if all(isinstance(r.get(c, 0), (int, float)) for r in rows)]
    time_cols = [c for c in numeric if re.search(r"(time|_s$|_ms$|_us$|^s$|^ms$|seconds)", c)] or numeric[:1]
    note = ""
    if time_cols:
        key = time_cols[0]
        rows.sort(key=lambda r: -float(r.get(key, 0)))
        total = sum(float(r.get(key, 0)) for r in rows)
        if total > 0:
            name_col = next((c for c in cols if c not in numeric), None)
            by_op = {}  # one op may have rows for several shapes
            for r in rows:
                op = str(r.get(name_col, "?"))
                by_op[op] = by_op.get(op, 0.0) + float(r.get(key, 0))
            top = sorted(by_op.items(), key=lambda kv: -kv[1])[:3]
            note = "top ops: " + ", ".join(f"{op} {100 * t / total:.0f}%" for op, t in top)
            cols.append("share")
            for r in rows:
                r["share"] = f"{100 * float(r.get(key, 0)) / total:.1f}%"
    # The rates each row's time gives for what its calls move and compute at least (bench's
    # bytes_per_step / flops_per_step), to read against the GPU's bandwidth (an H200 copies at
    # about 4.3 TB/s measured, 4.8 on its data sheet) and its dense peak.
    for amount, unit, name in (("bytes_per_step", 1e9, "GB/s"), ("flops_per_step", 1e12, "TFLOP/s")):
        if amount not in cols or "seconds_per_step" not in cols:
            continue
        cols.append(name)
        for r in rows:
            a, t = r.get(amount), r.get("seconds_per_step")
            ok = isinstance(a, (int, float)) and isinstance(t, (int, float)) and a > 0 and t > 0
            r[name] = f"{a / t / unit:.1f}" if ok else "-"
    # Where bench knew the GPU's bandwidth and peak, each row's roofline floor (floor_seconds_per_step,
    # null otherwise): the share of its time the floor is, and the rows furthest above theirs.
    if "floor_seconds_per_step" in cols and "seconds_per_step" in cols:
        cols.append("%roof")
        gaps = []
        for r in rows:
            f, t = r.get("floor_seconds_per_step"), r.get("seconds_per_step")
            ok = isinstance(f, (int, float)) and isinstance(t, (int, float)) and t > 0
            r["%roof"] = f"{100 * f / t:.0f}" if ok else "-"
            if ok:
                gaps.append((t - f, r))
        gaps.sort(key=lambda g: -g[0])
        if gaps:
            furthest = ", ".join(f"{r.get('op', '?')} {r.get('shape', '')} +{1e3 * g:.3f} ms" for g, r in gaps[:3])
            note = (note + "; " if note else "") + "furthest above the roofline: " + furthest

    def cell(v):
        if v is None:
            return "-"
        if isinstance(v, float):
            return f"{v:.6g}"
        return str(v)

    table = [[cell(r.get(c, "")) for c in cols] for r in rows]
    widths = [max(len(c), *(len(t[i]) for t in table)) for i, c in enumerate(cols)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(cols, widths))]
    lines += ["  ".join(t[i].ljust(widths[i]) for i in range(len(cols))) for t in table]
    return lines, note


def cmd_bench(args):
    if len(args) != 4:
        die("usage: bench STDOUT JSON_OUT PROFILE_OUT LABEL")
    src, json_out, profile_out, label = args
    try:
        lines = open(src).read().splitlines()
    except OSError as e:
        die(f"cannot read {src}: {e.strerror}")
    obj, text = None, []
    for line in lines:
        s = line.strip()
        if s.startswith("{"):
            try:
                d = json.loads(s)
                if isinstance(d, dict):
                    obj = d
                    continue
            except ValueError:
                pass
        if s:
            text.append(line)
    if obj is None:
        print(f"FAIL: {label}: no JSON object in bench output")
        return 1
    with open(json_out, "w") as f:
        json.dump(obj, f, indent=1, sort_keys=True)
        f.write("\n")
    note = ""
    profiled = obj.get("profile") is not None
    if profiled or text:
        out = [f"# {label}: trainer bench --profile ({obj.get('steps', '?')} timed steps)"]
        out += text
        if profiled:
            table, note = render_profile(obj["profile"])
            rows = obj["profile"] if isinstance(obj["profile"], list) else []
            total = sum(float(r.get("seconds_per_step", 0)) for r in rows if isinstance(r, dict))
            if total > 0 and isinstance(obj.get("step_s"), (int, float)):
                out.append(f"# ops total {total:.4f} s per step of the {obj['step_s']:.4f} s step")
            if isinstance(obj.get("roofline"), str):
                out.append(f"# %roof: each op's floor at {obj['roofline']} as a share of its time")
            out += table
        with open(profile_out, "w") as f:
            f.write("\n".join(out) + "\n")

    def num(k):
        v = obj.get(k)
        return float(v) if isinstance(v, (int, float)) else None

    tok, mfu = num("tokens_per_s"), num("mfu")
    parts = [label]
    parts.append(f"{tok:,.0f} tok/s" if tok is not None else "tok/s ?")
    peak, kind = num("peak_flops_per_rank"), obj.get("peak_kind")
    of = " ".join(x for x in [f"{peak / 1e12:.4g} TFLOP/s" if peak else "", str(kind) if kind else ""] if x)
    if mfu is not None:
        parts.append(f"MFU {100 * mfu:.1f}%" + (f" of {of}" if of else ""))
    elif "mfu" in obj:
        parts.append("MFU n/a" + (f" ({kind})" if kind else ""))
    step = num("step_s")
    if step is not None:
        # Under train.graphs: step bench cannot split a replay: forward_s and backward_s are null.
        passes = ("forward_s", "backward_s") if num("forward_s") is not None else ("forward_backward_s",)
        split = [f"{k[:-2].replace('_', '+')} {num(k):.3f}" for k in passes + ("optimizer_s",) if num(k) is not None]
        parts.append(f"step {step:.3f} s" + (f" ({', '.join(split)})" if split else ""))
    if num("peak_memory_bytes") is not None:
        parts.append(f"peak alloc {gib(num('peak_memory_bytes'))}")
    if num("device_memory_used_bytes") is not None:
        parts.append(f"device used {gib(num('device_memory_used_bytes'))}")
    if num("init_params_s") is not None:
        parts.append(f"parameter init {num('init_params_s'):.2f} s")
    if obj.get("device_name"):
        parts.append(str(obj["device_name"]))
    if note:
        parts.append(note + (f" (floors at {obj['roofline']})" if isinstance(obj.get("roofline"), str) else ""))
    print(", ".join(parts))
    if tok is None or tok <= 0:
        return 1
    return 0


FUNC_RE = re.compile(r"Function\s+([^\s:]+)\s*:\s*(.*)$")
FIELD_RE = re.compile(r"\b(REG|STACK|SHARED|LOCAL):(\d+)")


def demangle(names):
    if not names or not shutil.which("c++filt"):
        return {n: n for n in names}
    r = subprocess.run(["c++filt"], input="\n".join(names) + "\n", capture_output=True, text=True)
    out = r.stdout.splitlines()
    if r.returncode != 0 or len(out) != len(names):
        return {n: n for n in names}
    return dict(zip(names, out))


def parse_cuobjdump(text, arch):
    """{mangled: {REG, STACK, SHARED, LOCAL}} from `cuobjdump --dump-resource-usage` text; the
    fields follow "Function NAME:" on the same line or the next."""
    kernels, pending = {}, None
    for line in text.splitlines():
        m = re.search(r"arch\s*=\s*(sm_\w+)", line)
        if m:
            arch.add(m.group(1))
        m = FUNC_RE.search(line)
        if m:
            pending, rest = m.group(1), m.group(2)
        elif pending:
            rest = line
        else:
            continue
        fields = dict((k, int(v)) for k, v in FIELD_RE.findall(rest))
        if "REG" in fields:
            kernels[pending] = fields
            pending = None
    return kernels


def parse_ptxas(text, arch):
    """{mangled: {REG, SHARED, STACK, SPILL_ST, SPILL_LD}} of the entry functions in `ptxas -v`
    output (a build log with -Xptxas=-v)."""
    kernels, entry, props = {}, None, None
    for line in text.splitlines():
        m = re.search(r"Compiling entry function '([^']+)' for '(sm_\w+)'", line)
        if m:
            entry = m.group(1)
            arch.add(m.group(2))
            kernels.setdefault(entry, {})
            continue
        m = re.search(r"Function properties for (\S+)", line)
        if m:
            props = m.group(1)
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and props in kernels:
            kernels[props].update(STACK=int(m.group(1)), SPILL_ST=int(m.group(2)), SPILL_LD=int(m.group(3)))
            continue
        m = re.search(r"Used (\d+) registers", line)
        if m and entry:
            kernels[entry]["REG"] = int(m.group(1))
            sm = re.search(r"(\d+) bytes smem", line)
            kernels[entry]["SHARED"] = int(sm.group(1)) if sm else 0
            entry = None
    return {k: v for k, v in kernels.items() if "REG" in v}


def cmd_resources(args):
    ptxas_path = None
    if "--ptxas" in args:
        i = args.index("--ptxas")
        if i + 1 >= len(args):
            die("--ptxas needs a file")
        ptxas_path = args[i + 1]
        del args[i:i + 2]
    if not args:
        die("usage: resources OUT.tsv [--ptxas BUILD_LOG] [CUOBJDUMP_FILE...]")
    arch = set()
    text = ""
    for path in args[1:]:
        try:
            text += open(path).read() + "\n"
        except OSError as e:
            die(f"cannot read {path}: {e.strerror}")
    if len(args) == 1 and ptxas_path is None:
        text = sys.stdin.read()
    kernels = parse_cuobjdump(text, arch)
    ptx = {}
    if ptxas_path:
        try:
            ptx = parse_ptxas(open(ptxas_path, errors="replace").read(), arch)
        except OSError as e:
            die(f"cannot read {ptxas_path}: {e.strerror}")
    for name, f in ptx.items():  # ptxas adds the spill counts; cuobjdump's numbers win otherwise
        merged = dict(f)
        merged.update(kernels.get(name, {}))
        kernels[name] = merged
    if not kernels:
        print("FAIL: no kernels in the cuobjdump / ptxas output")
        return 1
    names = demangle(sorted(kernels))
    have_spills = bool(ptx)
    rows = []
    for mangled, f in kernels.items():
        name = names[mangled].replace("trainer::cuda::(anonymous namespace)::", "")
        rows.append((name, f.get("REG", 0), f.get("SHARED", 0), f.get("STACK", 0), f.get("LOCAL", ""),
                     f.get("SPILL_ST", ""), f.get("SPILL_LD", "")))
    rows.sort()
    with open(args[0], "w") as f:
        f.write("kernel\tregisters\tshared_bytes\tstack_bytes\tlocal_bytes\tspill_store_bytes\tspill_load_bytes\n")
        for r in rows:
            f.write("\t".join(str(x) for x in r) + "\n")
    short = lambda n: n.split("(")[0][:60]
    top = max(rows, key=lambda r: r[1])
    msg = f"{len(rows)} kernels ({','.join(sorted(arch)) or '?'}), max {top[1]} registers ({short(top[0])}); "
    if have_spills:
        bad = [r for r in rows if (r[5] or 0) > 0 or (r[6] or 0) > 0]
        msg += f"{len(bad)} kernels spill (ptxas -v)"
    else:
        bad = [r for r in rows if r[3] > 0 or (r[4] or 0) > 0]
        msg += f"{len(bad)} use stack/local memory (spills or local arrays; no ptxas log to tell)"
    if bad:
        msg += ": " + ", ".join(short(r[0]) for r in bad[:4]) + (" ..." if len(bad) > 4 else "")
    print(msg)
    return 0


def main():
    cmds = {"losses": cmd_losses, "bf16": cmd_bf16, "identical": cmd_identical, "table": cmd_table,
            "bench": cmd_bench, "resources": cmd_resources}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        die("usage: gpu_check_compare.py " + "|".join(cmds) + " ... (see the header)")
    sys.exit(cmds[sys.argv[1]](sys.argv[2:]))


if __name__ == "__main__":
    main()
