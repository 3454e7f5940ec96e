#!/usr/bin/python3
"""sweep_plot.py CSV PNG [TITLE]: bar chart of tokens/s per layout from scripts/sweep.sh's CSV.

Layouts that ran are bars (labelled with their tokens/s); the others are marked on the axis
with their status (skipped, oom, invalid, crash, timeout, no_result), so a failed layout is
visible rather than missing. (The plan's predictions stay in the CSV: on an oversubscribed
CPU they differ from the measurements by an order of magnitude and would flatten the bars.)
Needs Debian's python3-matplotlib (scripts/setup.sh installs it); renders without a display.
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)


def label(row):
    sched = f" {row['schedule']}" if row["pipeline"] not in ("", "1") else ""
    if not row["data"]:
        return row["layout"]
    return f"{row['data']}x{row['tensor']}x{row['pipeline']} z{row['zero']} mb{row['micro_batch']}{sched}"


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    rows = list(csv.DictReader(open(sys.argv[1], newline="")))
    if not rows:
        sys.exit(f"sweep_plot.py: {sys.argv[1]} has no rows")
    title = sys.argv[3] if len(sys.argv) == 4 else "sweep"
    names = [label(r) for r in rows]
    measured = [float(r["tokens_per_s"]) if r["status"] == "ok" and r["tokens_per_s"] else 0.0 for r in rows]

    width = max(6.0, 0.35 * len(rows) + 2.0)
    fig, ax = plt.subplots(figsize=(width, 5.0))
    xs = range(len(rows))
    colors = ["tab:blue" if r["status"] == "ok" else "tab:red" for r in rows]
    bars = ax.bar(xs, measured, color=colors)
    top = max(measured + [1.0])
    for x, r, bar in zip(xs, rows, bars):
        if r["status"] == "ok":
            ax.text(x, bar.get_height(), f"{measured[x]:.3g}", ha="center", va="bottom", fontsize=6, rotation=90)
        else:
            ax.text(x, top * 0.02, r["status"], ha="center", va="bottom", fontsize=7, rotation=90, color="tab:red")
    ax.set_xticks(list(xs))
    ax.set_xticklabels(names, rotation=90, fontsize=7)
    ax.set_ylabel("tokens/s")
    ax.set_xlabel("data x tensor x pipeline, ZeRO stage, micro-batch, schedule", fontsize=8)
    ax.set_ylim(0, top * 1.15)
    ok = sum(r["status"] == "ok" for r in rows)
    ax.set_title(f"{title}: tokens/s per layout ({ok} of {len(rows)} ran)", fontsize=10)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=120)


if __name__ == "__main__":
    main()
