#!/usr/bin/env python3
"""An independent check of fairpool's Prometheus exposition (text format 0.0.4).

Usage: prometheus_parse.py PROGRAM   (PROGRAM is tests/prometheus_dump.cpp, built)

Runs PROGRAM with `single` and `multi`, parses each output with the grammar of
https://prometheus.io/docs/instrumenting/exposition_formats/ and checks: metric and
label names, label-value escapes, # HELP / # TYPE at most once per family and TYPE
before its samples, a family's samples in one group, no duplicate series, counters
named *_total with non-negative values, histograms with cumulative _bucket samples in
increasing le order ending in le="+Inf" equal to _count, and _sum present. Exits 1
with the first problem.
"""
import math
import re
import subprocess
import sys

METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}


class Bad(Exception):
    pass


def parse_float(text):
    if text in ("+Inf", "Inf"):
        return math.inf
    if text == "-Inf":
        return -math.inf
    if text == "NaN":
        return math.nan
    if not re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", text):
        raise Bad(f"not a float: {text!r}")
    return float(text)


def parse_labels(text, pos):
    """Parses `{name="value",...}` from text[pos] == '{'; returns (labels, next pos)."""
    labels = {}
    pos += 1
    while True:
        if text[pos] == "}":
            return labels, pos + 1
        m = LABEL_NAME.match(text, pos)
        if not m:
            raise Bad(f"bad label name at column {pos + 1}")
        name = m.group()
        if name.startswith("__"):
            raise Bad(f"reserved label name {name}")
        pos = m.end()
        if text[pos:pos + 2] != '="':
            raise Bad(f"expected =\" after label {name}")
        pos += 2
        value = []
        while True:
            if pos >= len(text):
                raise Bad("unterminated label value")
            c = text[pos]
            if c == "\\":
                escaped = text[pos + 1:pos + 2]
                if escaped not in ("\\", '"', "n"):
                    raise Bad(f"bad escape \\{escaped} in label value")
                value.append("\n" if escaped == "n" else escaped)
                pos += 2
            elif c == '"':
                pos += 1
                break
            elif c == "\n":
                raise Bad("raw newline in label value")
            else:
                value.append(c)
                pos += 1
        if name in labels:
            raise Bad(f"label {name} twice")
        labels[name] = "".join(value)
        if text[pos] == ",":
            pos += 1
        elif text[pos] != "}":
            raise Bad(f"expected , or }} at column {pos + 1}")


def family_of(name, types):
    for suffix in ("_bucket", "_sum", "_count"):
        base = name[: -len(suffix)] if name.endswith(suffix) else None
        if base and types.get(base) in ("histogram", "summary"):
            return base
    return name


def check(text, expected_pools):
    if not text.endswith("\n"):
        raise Bad("the exposition must end with a line feed")
    types, helps, samples = {}, set(), {}
    finished, current = set(), None
    series = set()
    for number, line in enumerate(text[:-1].split("\n"), 1):
        try:
            if line.startswith("#"):
                parts = line.split(" ", 3)
                if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                    name = parts[2]
                    if not METRIC_NAME.fullmatch(name):
                        raise Bad(f"bad metric name {name!r}")
                    if parts[1] == "HELP":
                        if name in helps:
                            raise Bad(f"second HELP for {name}")
                        helps.add(name)
                    else:
                        if len(parts) != 4 or parts[3] not in TYPES:
                            raise Bad(f"bad TYPE line")
                        if name in types:
                            raise Bad(f"second TYPE for {name}")
                        if name in samples:
                            raise Bad(f"TYPE for {name} after its samples")
                        types[name] = parts[3]
                continue
            if not line.strip():
                continue
            m = METRIC_NAME.match(line)
            if not m:
                raise Bad("a sample must start with a metric name")
            name, pos = m.group(), m.end()
            labels = {}
            if pos < len(line) and line[pos] == "{":
                labels, pos = parse_labels(line, pos)
            rest = line[pos:]
            if not rest.startswith(" "):
                raise Bad("expected a space before the value")
            fields = rest.split()
            if len(fields) not in (1, 2):
                raise Bad("expected a value and an optional timestamp")
            value = parse_float(fields[0])
            family = family_of(name, types)
            if family not in types:
                raise Bad(f"sample of {family} before (or without) its TYPE")
            if family != current:
                if family in finished:
                    raise Bad(f"samples of {family} are not in one group")
                if current:
                    finished.add(current)
                current = family
            key = (name, tuple(sorted(labels.items())))
            if key in series:
                raise Bad(f"duplicate series {key}")
            series.add(key)
            if labels.get("pool") not in expected_pools:
                raise Bad(f"pool label {labels.get('pool')!r}, expected one of {expected_pools}")
            samples.setdefault(family, []).append((name, labels, value))
        except (Bad, IndexError) as e:
            raise Bad(f"line {number}: {e}: {line!r}")

    for family, kind in types.items():
        if family not in samples:
            raise Bad(f"{family}: TYPE without samples")
        if kind == "counter":
            if not family.endswith("_total"):
                raise Bad(f"counter {family} does not end in _total")
            if any(v < 0 or math.isnan(v) for _, _, v in samples[family]):
                raise Bad(f"counter {family} has a negative value")
        if kind == "histogram":
            check_histogram(family, samples[family])
    return types, samples


def check_histogram(family, samples):
    groups = {}
    for name, labels, value in samples:
        rest = tuple(sorted((k, v) for k, v in labels.items() if k != "le"))
        g = groups.setdefault(rest, {"buckets": [], "sum": None, "count": None})
        if name == family + "_bucket":
            if "le" not in labels:
                raise Bad(f"{family}: bucket without le")
            g["buckets"].append((parse_float(labels["le"]), value))
        elif "le" in labels:
            raise Bad(f"{family}: le on {name}")
        elif name == family + "_sum":
            g["sum"] = value
        elif name == family + "_count":
            g["count"] = value
        else:
            raise Bad(f"{family}: unexpected sample {name}")
    for rest, g in groups.items():
        buckets = g["buckets"]
        if not buckets or buckets[-1][0] != math.inf:
            raise Bad(f"{family}{rest}: the last bucket must be le=\"+Inf\"")
        for (le0, n0), (le1, n1) in zip(buckets, buckets[1:]):
            if not le0 < le1:
                raise Bad(f"{family}{rest}: le not increasing ({le0} then {le1})")
            if n1 < n0:
                raise Bad(f"{family}{rest}: buckets not cumulative ({n0} then {n1})")
        if g["count"] is None or g["sum"] is None:
            raise Bad(f"{family}{rest}: _count and _sum are required")
        if buckets[-1][1] != g["count"]:
            raise Bad(f"{family}{rest}: +Inf bucket {buckets[-1][1]} != _count {g['count']}")
        if g["sum"] < 0:
            raise Bad(f"{family}{rest}: negative _sum")


def main():
    program = sys.argv[1]
    cases = [("single", {'tenant "a"\\b\nline two'}), ("multi", {"db", "cache"})]
    for mode, pools in cases:
        text = subprocess.run([program, mode], check=True, capture_output=True, text=True).stdout
        try:
            types, samples = check(text, pools)
        except Bad as e:
            print(f"{mode}: {e}")
            return 1
        count = sum(len(s) for s in samples.values())
        print(f"{mode}: ok, {len(types)} families, {count} samples, pools {sorted(pools)}")
        # The scenario's numbers, read back through the parser.
        want = {("fairpool_grants_total", "after_wait"): 2, ("fairpool_rejections_total", "saturated"): 1,
                ("fairpool_rejections_total", "timeout"): 1, ("fairpool_retirements_total", "dirty"): 1}
        for (name, label), value in want.items():
            got = [v for n, l, v in samples[name] if label in l.values() and l["pool"] != "cache"]
            if got != [value]:
                print(f"{mode}: {name}{{{label}}} is {got}, expected [{value}]")
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
