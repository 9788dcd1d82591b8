#!/usr/bin/env python3
"""Turns Google Benchmark JSON from core_bench (one run, or repetitions with
--benchmark_report_aggregates_only) into bench rows on stdout, one JSON object per
line: {"scenario", "design": "fairpool", "metric", "value", "unit"}.

CPU time, not wall time: the core never blocks, so its CPU time is its cost, and
on a shared machine it is far less disturbed by other processes than wall time.
Also reports each flatness series' spread (largest ÷ smallest median)."""
import json
import sys


def main(path):
    with open(path) as f:
        data = json.load(f)
    # With repetitions, the median aggregates; with one run (bench/run --quick), the run.
    repeated = any(b.get("aggregate_name") == "median" for b in data["benchmarks"])
    medians = {}
    for b in data["benchmarks"]:
        if repeated and b.get("aggregate_name") != "median":
            continue
        name = b["run_name"]  # e.g. "cycle", "queued_waiters/1000"
        medians[name] = b["cpu_time"]
        if b["time_unit"] != "ns":
            sys.exit(f"core_rows.py: expected ns, got {b['time_unit']} for {name}")
    for name, value in medians.items():
        metric = {"cycle": "ns_per_cycle", "snapshot": "ns_per_snapshot"}.get(name.split("/")[0], "ns_per_handoff")
        print(json.dumps({"scenario": "core/" + name.replace("/", "="), "design": "fairpool",
                          "metric": metric, "value": round(value, 2), "unit": "ns"}))
    for series in ("queued_waiters", "active_handles"):
        values = [v for k, v in medians.items() if k.startswith(series + "/")]
        if values:
            print(json.dumps({"scenario": "core/" + series, "design": "fairpool",
                              "metric": "largest_over_smallest", "value": round(max(values) / min(values), 3),
                              "unit": "ratio"}))


if __name__ == "__main__":
    main(sys.argv[1])
