#!/usr/bin/env python3
"""Checks a trainer timeline trace (log.trace) against Chrome's trace-event format as Perfetto
reads it, and the trainer's own promises (README "Timeline traces"):
- the file is one JSON object with traceEvents (a list) and displayTimeUnit;
- every event has name, ph, pid and tid; complete spans (X) have ts and dur >= 0; async spans
  come as one "b" and one "e" per id, the end not before the begin; metadata (M) names every
  process "rank R (data D, tensor T, pipeline P)" by the layout's rank order;
- complete spans of one thread nest (a span that starts inside another ends inside it);
- comm spans carry group, bytes and seq; send/recv a peer; non-blocking collectives a bucket;
- each --require CATEGORY:NAME occurs;
- with --bench BENCH.json (trainer bench --json of the same run): the idle time of a rank's
  "pipeline" spans (their length less the forward and backward spans inside them), per traced
  step, is within 10% of that rank's bubble_s_per_rank (or within 0.5 ms where that is more: a
  stage that seldom waits has a bubble of a few ms, of which the executor's own work between
  passes and the scheduler's preemptions on shared cores are more than a tenth), and the
  largest over ranks within 10% (or 0.5 ms, for the same reason) of bench's bubble_s (the
  slowest rank's, its headline figure).
Exit 1 with a message on the first violation."""
import argparse
import json
import re
import sys
from collections import defaultdict

SLACK_US = 0.01  # timestamps are printed to the nanosecond
BUBBLE_REL, BUBBLE_ABS_S = 0.1, 0.0005  # idle gaps against bench's bubble: 10%, or 0.5 ms where more


def bubble_apart(idle_s, bubble_s):
    """True where a trace's idle gaps and bench's bubble (seconds per step) disagree."""
    return bubble_s <= 0 or abs(idle_s - bubble_s) > max(BUBBLE_REL * bubble_s, BUBBLE_ABS_S)


def fail(msg):
    print("check_trace: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--layout", required=True, help="DATAxTENSORxPIPELINE, e.g. 2x1x2")
    ap.add_argument("--require", action="append", default=[])
    ap.add_argument("--bench")
    a = ap.parse_args()
    dp, tp, pp = (int(x) for x in a.layout.split("x"))
    with open(a.trace) as f:
        doc = json.load(f)
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        fail("no traceEvents list")
    if doc.get("displayTimeUnit") not in ("ms", "ns"):
        fail("displayTimeUnit missing")
    events = doc["traceEvents"]
    names = {}
    spans = defaultdict(list)
    asyncs = defaultdict(list)
    seen = set()
    for e in events:
        for k in ("name", "ph", "pid", "tid"):
            if k not in e:
                fail(f"event without {k}: {e}")
        ph = e["ph"]
        if ph == "M":
            if e["name"] == "process_name":
                names[e["pid"]] = e["args"]["name"]
            continue
        if ph == "X":
            if not isinstance(e.get("ts"), (int, float)) or not isinstance(e.get("dur"), (int, float)) or e["dur"] < 0:
                fail(f"complete span without ts/dur >= 0: {e}")
            spans[(e["pid"], e["tid"])].append(e)
        elif ph in ("b", "e"):
            if "id" not in e or "cat" not in e or not isinstance(e.get("ts"), (int, float)):
                fail(f"async event without id/cat/ts: {e}")
            asyncs[e["id"]].append(e)
        else:
            fail(f"unexpected phase {ph}: {e}")
        seen.add(f"{e.get('cat')}:{e['name']}")
        if e.get("cat") == "comm" and ph in ("X", "b") and not e["name"].startswith("wait"):
            args = e.get("args", {})
            for k in ("group", "bytes", "seq"):
                if k not in args:
                    fail(f"comm span without {k}: {e}")
            if e["name"] in ("send", "recv") and "peer" not in args:
                fail(f"{e['name']} without peer: {e}")
            if ph == "b" and e["name"] in ("all_reduce", "reduce_scatter", "all_gather") and "bucket" not in args:
                fail(f"non-blocking {e['name']} without bucket: {e}")
    world = dp * tp * pp
    for r in range(world):
        want = f"rank {r} (data {(r // tp) % dp}, tensor {r % tp}, pipeline {r // (tp * dp)})"
        if names.get(r) != want:
            fail(f"pid {r} is named {names.get(r)!r}, want {want!r}")
    if set(names) != set(range(world)):
        fail(f"processes {sorted(names)}, want 0..{world - 1}")
    for i, pair in asyncs.items():
        phs = sorted(x["ph"] for x in pair)
        if phs != ["b", "e"]:
            fail(f"async id {i} has events {phs}")
        b = next(x for x in pair if x["ph"] == "b")
        e = next(x for x in pair if x["ph"] == "e")
        if e["ts"] + SLACK_US < b["ts"]:
            fail(f"async id {i} ends before it begins")
    for key, lst in spans.items():
        lst.sort(key=lambda x: (x["ts"], -x["dur"]))
        stack = []
        for s in lst:
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= s["ts"] + SLACK_US:
                stack.pop()
            if stack and s["ts"] + s["dur"] > stack[-1]["ts"] + stack[-1]["dur"] + SLACK_US:
                fail(f"on {key} {s['name']} at {s['ts']} (dur {s['dur']}) overlaps {stack[-1]['name']} at "
                     f"{stack[-1]['ts']} (dur {stack[-1]['dur']}) without nesting")
            stack.append(s)
    for req in a.require:
        if req not in seen:
            fail(f"no {req} event (have {sorted(seen)})")
    print(f"check_trace: {len(events)} events, {world} ranks, spans nest")
    if a.bench:
        with open(a.bench) as f:
            bench = json.load(f)
        bubbles = bench["bubble_s_per_rank"]
        idle_max = 0.0
        for r in range(world):
            main = spans[(r, 0)]
            pipes = [s for s in main if s["name"] == "pipeline"]
            if not pipes:
                fail(f"rank {r}: no pipeline spans")
            idle = 0.0
            for p in pipes:
                end = p["ts"] + p["dur"]
                busy = sum(s["dur"] for s in main if s["name"] in ("forward", "backward")
                           and s["ts"] >= p["ts"] - SLACK_US and s["ts"] + s["dur"] <= end + SLACK_US)
                idle += p["dur"] - busy
            per_step_s = idle / len(pipes) / 1e6
            want = bubbles[r]
            print(f"check_trace: rank {r}: idle gaps {per_step_s * 1e3:.3f} ms per step, bench bubble "
                  f"{want * 1e3:.3f} ms ({len(pipes)} steps)")
            idle_max = max(idle_max, per_step_s)
            if bubble_apart(per_step_s, want):
                fail(f"rank {r}: idle gaps {per_step_s:.6f} s per step vs bench's bubble {want:.6f} s: more than 10% "
                     "(and 0.5 ms) apart")
        head = bench["bubble_s"]
        print(f"check_trace: slowest stage: idle gaps {idle_max * 1e3:.3f} ms per step, bench bubble_s {head * 1e3:.3f} ms")
        if bubble_apart(idle_max, head):
            fail(f"largest idle gaps {idle_max:.6f} s per step vs bench's bubble_s {head:.6f} s: more than 10% "
                 "(and 0.5 ms) apart")


if __name__ == "__main__":
    main()
