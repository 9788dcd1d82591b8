#!/usr/bin/python3
"""Draws the bench rows (a JSON list, as bench/run --json writes it) as one PNG of
four panels: uncontended round trip, the contended grid, tail fairness (#2192) and
per-tenant fairness. Debian's python3-matplotlib, hence /usr/bin/python3.

    bench/chart.py ROWS.json OUT.png"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from report import DESIGNS  # noqa: E402  (bench/report.py, beside this file)

COLORS = ["#d62728", "#7f7f7f", "#1f77b4", "#ff7f0e", "#2ca02c"]


def value(rows, scenario, metric, design):
    for r in rows:
        if r["scenario"] == scenario and r["metric"] == metric and r["design"] == design:
            return r["value"]
    return None


def bars(ax, labels, series, ylabel, log=False):
    width = 0.8 / len(DESIGNS)
    for i, (design, color) in enumerate(zip(DESIGNS, COLORS)):
        xs = [k + (i - len(DESIGNS) / 2 + 0.5) * width for k in range(len(labels))]
        ys = [series(label, design) or 0 for label in labels]
        ax.bar(xs, ys, width, label=design, color=color)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=45 if len(labels) > 4 else 0, ha="right" if len(labels) > 4 else "center",
                       fontsize=7)
    ax.set_ylabel(ylabel)
    if log:
        ax.set_yscale("log")


def main(rows_path, out_path):
    with open(rows_path) as f:
        rows = json.load(f)
    fig, axes = plt.subplots(2, 2, figsize=(14, 9))

    ax = axes[0][0]
    bars(ax, ["round_trip"], lambda s, d: value(rows, s, "ns_per_cycle", d), "ns per acquire+release (log)", log=True)
    ax.set_title("Uncontended round trip, one thread (lower is better)")
    ax.legend(fontsize=7)

    ax = axes[0][1]
    grid = [r["scenario"] for r in rows if r["scenario"].startswith("grid/") and r["metric"] == "total"
            and r["design"] == "fairpool"]
    bars(ax, grid, lambda s, d: value(rows, s, "total", d), "total µs (log)", log=True)
    ax.set_xticklabels([g.replace("grid/", "").replace("size=", "s").replace("/workers=", " w") for g in grid],
                       rotation=45, ha="right", fontsize=7)
    ax.set_title("Contended grid: size × workers, 10 cycles each (lower is better)")

    ax = axes[1][0]
    tail = next((r["scenario"] for r in rows if r["scenario"].startswith("tail/")), None)
    if tail:
        bars(ax, ["grants_while_waiting_max", "max_over_mean"], lambda m, d: value(rows, tail, m, d),
             "count / ratio (log)", log=True)
        ax.set_title("HikariCP #2192 tail: 4 workers, 2 resources (lower is better)")

    ax = axes[1][1]
    tenants = next((r["scenario"] for r in rows if r["scenario"].startswith("tenants/greedy=")), None)
    if tenants:
        bars(ax, ["jain_index", "greedy_share"], lambda m, d: value(rows, tenants, m, d), "index / fraction")
        ax.axhline(1.0, color="black", linewidth=0.5)
        ax.axhline(0.206, color="black", linewidth=0.5, linestyle=":")
        ax.set_title("1 greedy tenant (20×) + 9 light: Jain 1 = equal, 0.206 = by demand")

    fig.tight_layout()
    fig.savefig(out_path, dpi=90)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
