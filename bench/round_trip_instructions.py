#!/usr/bin/env python3
"""Instructions per uncontended round trip (acquire, completion, release) of every
design of bench/scenarios, counted by callgrind, as bench rows on stdout (one JSON
object per line): {"scenario": "round_trip", "design", "metric":
"instructions_per_cycle", "value", "unit": "instructions"}; and of those, the locked
ones ("locked_instructions_per_cycle": lock-prefixed, or xchg with memory), counted
in a process that has started a thread (scenarios --round-trip-cycles-threaded).

Each design runs N and 2N round trips in a process of its own (scenarios
--round-trip-cycles DESIGN N); the difference of the two totals divided by N cancels
the process's start, the pool's creation and the warm-up. Instruction counts do not
depend on the machine's load, unlike time.

The same for a contended acquire, on one thread (scenario
"grid/size=4/workers=64/one_thread", metric "instructions_per_acquire"): 64 coroutine
workers on a pool of 4, 10 cycles each, R and 2R such runs on one pool (scenarios
--grid-one-thread-runs DESIGN R); nearly every acquire queues. The coroutines' own cost
(spawning, suspending, resuming) is in every design's figure alike. On two threads the
grid's times depend on whether a run settled on one thread or both (common.hpp); this
count does not.

    bench/round_trip_instructions.py BUILD_DIR [--cycles N] [--grid-runs R]"""
import json
import sys

from callgrind import instructions, instructions_by_thread, locked_instructions

DESIGNS = ["fairpool", "mutex_condvar", "servicing_task", "notify_retry", "channel"]
CHECKING = "fairpool_check_after_idle"  # bench/scenarios/scenarios.hpp: checking_design
RECORDING = "fairpool_recorder"  # bench/scenarios/scenarios.hpp: recording_design


# bench/scenarios/scenarios.hpp: grid_one_thread_size, grid_one_thread_workers, grid_cycles_per_worker
GRID_SCENARIO = "grid/size=4/workers=64/one_thread"
GRID_WORKERS, GRID_CYCLES = 64, 10


def collected(program, design, cycles):
    return instructions([program, "--round-trip-cycles", design, str(cycles)])


def grid_collected(program, design, runs):
    return instructions([program, "--grid-one-thread-runs", design, str(runs)])


def per_cycle_by_thread(program, design, n):
    """Instructions per round trip of `design` on the main thread (the pool's) and on
    all other threads together, from runs of n and 2n cycles."""
    a = instructions_by_thread([program, "--round-trip-cycles", design, str(n)])
    b = instructions_by_thread([program, "--round-trip-cycles", design, str(2 * n)])
    return (b[0] - a[0]) / n, (sum(b[1:]) - sum(a[1:])) / n


def main():
    build = sys.argv[1]
    n = int(sys.argv[sys.argv.index("--cycles") + 1]) if "--cycles" in sys.argv else 20_000
    program = f"{build}/bench/scenarios"
    for design in DESIGNS:
        per = (collected(program, design, 2 * n) - collected(program, design, n)) / n
        print(json.dumps({"scenario": "round_trip", "design": design, "metric": "instructions_per_cycle",
                          "value": round(per, 1), "unit": "instructions"}))
    # Locked instructions (lock-prefixed, and xchg with memory) per round trip, in a
    # process that has started a thread, as a server's has: each costs ~5 ns here
    # where a plain one costs a fraction of one. (Per-instruction counts make
    # callgrind's files large: at most 10,000 and 20,000 cycles, which count exactly.)
    k = min(n, 10_000)
    for design in DESIGNS:
        threaded = [program, "--round-trip-cycles-threaded", design]
        per = (locked_instructions(threaded + [str(2 * k)]) - locked_instructions(threaded + [str(k)])) / k
        print(json.dumps({"scenario": "round_trip", "design": design, "metric": "locked_instructions_per_cycle",
                          "value": round(per, 2), "unit": "instructions"}))
    runs = int(sys.argv[sys.argv.index("--grid-runs") + 1]) if "--grid-runs" in sys.argv else 10
    acquires = GRID_WORKERS * GRID_CYCLES
    for design in DESIGNS:
        per = (grid_collected(program, design, 2 * runs) - grid_collected(program, design, runs)) / (runs * acquires)
        print(json.dumps({"scenario": GRID_SCENARIO, "design": design, "metric": "instructions_per_acquire",
                          "value": round(per, 1), "unit": "instructions"}))
    # fairpool with check_after_idle = 1 ns: every acquire checks the idle resource first
    per = (collected(program, CHECKING, 2 * n) - collected(program, CHECKING, n)) / n
    print(json.dumps({"scenario": "round_trip/check_after_idle", "design": "fairpool",
                      "metric": "instructions_per_cycle", "value": round(per, 1), "unit": "instructions"}))
    # fairpool with the flight recorder on: the pool's thread (the actor's copy into the
    # ring) apart from the recorder's writer thread (formatting and writing the files).
    # At most 10,000 and 20,000 cycles, so that the default ring (65,536 records, 3 a
    # cycle) holds the whole run: under callgrind the writer runs only when valgrind
    # lets it, and a step lost in a gap would cost the actor less than one recorded.
    m = min(n, 10_000)
    pool_off, _ = per_cycle_by_thread(program, "fairpool", m)
    pool_on, writer = per_cycle_by_thread(program, RECORDING, m)
    for metric, value, unit in [("instructions_per_cycle", pool_on, "instructions"),
                                ("pool_thread_vs_off", pool_on / pool_off, "ratio"),
                                ("writer_instructions_per_cycle", writer, "instructions")]:
        print(json.dumps({"scenario": "round_trip/recorder", "design": "fairpool", "metric": metric,
                          "value": round(value, 3 if unit == "ratio" else 1), "unit": unit}))


if __name__ == "__main__":
    main()
