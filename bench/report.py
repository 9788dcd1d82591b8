#!/usr/bin/env python3
"""Reads bench rows (one JSON object per line, from the files given) and prints the
markdown table: every fairpool figure beside each baseline's, with the ratio
baseline ÷ fairpool. With --json FILE also writes all rows as one JSON list. Rows of
scenario "run" (design "machine", unit "text") say where and on what the run was made:
metrics commit, date, cpu_model, cores."""
import argparse
import json

DESIGNS = ["fairpool", "mutex_condvar", "servicing_task", "notify_retry", "channel"]
EXTRA_DESIGNS = ["connect_per_request", "twemproxy"]  # bench/redis_sessions, bench/proxy


def read_rows(paths):
    rows = []
    for path in paths:
        with open(path) as f:
            rows += [json.loads(line) for line in f if line.strip()]
    return rows


def fmt(v):
    if v is None:
        return "–"
    if v == 0:
        return "0"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    if abs(v) >= 1:
        return f"{v:.2f}"
    return f"{v:.3f}"


def table(rows):
    run = {r["metric"]: r["value"] for r in rows if r["scenario"] == "run"}
    rows = [r for r in rows if r["scenario"] != "run"]
    designs = DESIGNS + [d for d in EXTRA_DESIGNS if any(r["design"] == d for r in rows)]
    cells, order = {}, []
    for r in rows:
        key = (r["scenario"], r["metric"], r["unit"])
        if key not in cells:
            cells[key] = {}
            order.append(key)
        cells[key][r["design"]] = r["value"]
    head = ["scenario", "metric", "unit", "fairpool"]
    for d in designs[1:]:
        head += [d, "×"]
    out = [f"Run: commit {run['commit']}, {run['date']}, {run['cpu_model']}, {run['cores']} cores", ""] if run else []
    out += ["| " + " | ".join(head) + " |",
           "|" + "|".join(["---"] * 3 + ["---:"] * (len(head) - 3)) + "|"]
    for key in order:
        values = cells[key]
        fp = values.get("fairpool")
        line = list(key) + [fmt(fp)]
        for d in designs[1:]:
            v = values.get(d)
            line += [fmt(v), "–" if v is None or not fp else f"{v / fp:.2f}"]
        out.append("| " + " | ".join(line) + " |")
    out += ["", "× = baseline ÷ fairpool. For times, waits, counts of allocations, handlers, inversions and "
            "grants while waiting, and greedy_share, greedy_held_share and greedy_leases_*, > 1 means fairpool "
            "is lower (better); for jain_index, grants_light_*, light_held_share*, slots_busy, grants and "
            "sessions_per_s, < 1 means fairpool is higher (better). greedy_wait_p50 is what the greedy tenant "
            "pays for the others' turns: neither way is better. Rows NAME/cap=N are fairpool with "
            "max_leases_per_handle = N, beside NAME's fairpool without a cap."]
    return "\n".join(out)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("rows", nargs="+")
    parser.add_argument("--json")
    args = parser.parse_args()
    rows = read_rows(args.rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
            f.write("\n")
    print(table(rows))


if __name__ == "__main__":
    main()
