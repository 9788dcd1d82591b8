#!/usr/bin/env python3
"""Instructions per iteration of the core's scenarios (bench/core_scenarios.hpp),
counted by callgrind, as bench rows on stdout (one JSON object per line, like
core_rows.py): {"scenario", "design": "fairpool", "metric", "value", "unit"}.

Only calls of scheduler::step (scheduler::snapshot for the snapshot rows) are counted
(callgrind --toggle-collect), so building
the events and reading the effects are left out; each scenario runs N and 2N
iterations and the difference is divided by N, which also cancels the set-up steps.
Instruction counts do not depend on the machine's load, unlike time.

    bench/core_instructions.py BUILD_DIR [--iterations N]"""
import json
import sys

from callgrind import instructions


SCENARIOS = [("cycle", []), ("queued_waiters", ["10"]), ("queued_waiters", ["1000"]),
             ("queued_waiters", ["100000"]), ("active_handles", ["1"]), ("active_handles", ["100"]),
             ("active_handles", ["10000"])]


def collected(program, args):
    return instructions([program, *args], toggle_collect="fairpool::core::scheduler::step*")


def main():
    build = sys.argv[1]
    n = int(sys.argv[sys.argv.index("--iterations") + 1]) if "--iterations" in sys.argv else 100_000
    program = f"{build}/bench/core_instructions"
    per = {}
    for name, args in SCENARIOS:
        once = collected(program, [name, *args, str(n)])
        twice = collected(program, [name, *args, str(2 * n)])
        key = name + ("/" + args[0] if args else "")
        per[key] = (twice - once) / n
        metric = "instructions_per_cycle" if name == "cycle" else "instructions_per_handoff"
        print(json.dumps({"scenario": "core/" + key.replace("/", "="), "design": "fairpool",
                          "metric": metric, "value": round(per[key], 1), "unit": "instructions"}))
    # A whole snapshot (scheduler::snapshot only), of 10 and of 100,000 queued waiters.
    for waiters, iterations in (("10", 10_000), ("100000", 5)):
        args = ["snapshot", waiters]
        once = instructions([program, *args, str(iterations)], toggle_collect="fairpool::core::scheduler::snapshot*")
        twice = instructions([program, *args, str(2 * iterations)], toggle_collect="fairpool::core::scheduler::snapshot*")
        print(json.dumps({"scenario": "core/snapshot=" + waiters, "design": "fairpool",
                          "metric": "instructions_per_snapshot", "value": round((twice - once) / iterations, 1),
                          "unit": "instructions"}))
    for series in ("queued_waiters", "active_handles"):
        values = [v for k, v in per.items() if k.startswith(series + "/")]
        print(json.dumps({"scenario": "core/" + series, "design": "fairpool",
                          "metric": "instructions_largest_over_smallest",
                          "value": round(max(values) / min(values), 3), "unit": "ratio"}))


if __name__ == "__main__":
    main()
