#!/usr/bin/python3
"""plot_metrics.py METRICS.jsonl [METRICS.jsonl ...] [--out run.png] [--title TEXT]

Plots trainer metrics files (log.metrics, one JSON object per line) against step, one panel
each: train loss with validation loss (val_loss, and val_loss_<source> fields when a blend
reports them), learning rate, gradient norm, tokens/s and MFU. Several files are overlaid, one
colour per run, labelled by file name. Bad-step events (records with "event") are marked on the
loss panel (x: skipped, v: rolled back, !: spike warned). A step logged twice (steps replayed
after a rollback) keeps its last record. Prints the PNG's path.
Needs Debian's python3-matplotlib (scripts/setup.sh installs it); renders without a display.
"""
import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)

PANELS = [("loss", "loss"), ("lr", "learning rate"), ("grad_norm", "gradient norm"),
          ("tokens_per_s", "tokens/s"), ("mfu", "MFU")]
MARKERS = {"skip": "x", "rollback": "v", "warn": "^", "stop": "s"}


def read_run(path):
    train, evals, events = {}, {}, []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                sys.exit(f"plot_metrics.py: {path}:{n}: not JSON: {e}")
            if "step" not in rec:
                continue
            if "event" in rec:
                events.append(rec)
            elif any(k.startswith("val_loss") for k in rec):
                evals[rec["step"]] = rec
            elif "loss" in rec:
                train[rec["step"]] = rec
    if not train and not evals:
        sys.exit(f"plot_metrics.py: {path} holds no train or evaluation records")
    return [train[s] for s in sorted(train)], [evals[s] for s in sorted(evals)], events


def series(records, key):
    pts = [(r["step"], r[key]) for r in records if r.get(key) is not None]
    return [p[0] for p in pts], [p[1] for p in pts]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[2])
    ap.add_argument("metrics", nargs="+")
    ap.add_argument("--out", default=None, help="PNG to write (default: beside the first file, .png)")
    ap.add_argument("--title", default=None)
    a = ap.parse_args()
    out = a.out or os.path.splitext(a.metrics[0])[0] + ".png"
    runs = [(os.path.basename(p), *read_run(p)) for p in a.metrics]
    fig, axes = plt.subplots(len(PANELS), 1, figsize=(8, 2.2 * len(PANELS)), sharex=True)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (name, train, evals, events) in enumerate(runs):
        c = colors[i % len(colors)]
        for ax, (key, label) in zip(axes, PANELS):
            xs, ys = series(train, key)
            if xs:
                ax.plot(xs, ys, color=c, lw=1, label=f"{name} train" if key == "loss" else name)
            ax.set_ylabel(label, fontsize=8)
        val_keys = sorted({k for r in evals for k in r if k.startswith("val_loss") and not k.endswith("_s")})
        for j, k in enumerate(val_keys):
            xs, ys = series(evals, k)
            axes[0].plot(xs, ys, color=c, lw=1.5, ls=["--", ":", "-."][j % 3], marker="o", ms=3,
                         label=f"{name} {k.replace('_', ' ')}")
        for ev in events:
            y = ev.get("loss")
            if y is None:
                xs, ys = series(train, "loss")
                y = max(ys) if ys else 0
            axes[0].plot([ev["step"]], [y], color=c, ls="none", marker=MARKERS.get(ev.get("action"), "o"), ms=8)
    axes[0].legend(fontsize=7)
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=7)
    axes[-1].set_xlabel("step")
    fig.suptitle(a.title or ", ".join(r[0] for r in runs), fontsize=10)
    fig.tight_layout()
    if os.path.dirname(out):
        os.makedirs(os.path.dirname(out), exist_ok=True)
    fig.savefig(out, dpi=100)
    print(out)


if __name__ == "__main__":
    main()
