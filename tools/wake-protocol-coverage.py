#!/usr/bin/env python3
"""Statements of model/wake_protocol.pml that no process ever reaches.

The model's drain is an inline expanded in every process that may hold the actor, so
pan lists, per process, the copies that process never runs (an Acquirer never
announces a shutdown, say). A statement counts as reached when some process reaches
one of its copies (pan numbers each copy's state: the unreached lists name them). Prints each statement reached by none ("FILE:LINE statement") and exits 1 if
there is any.

    wake-protocol-coverage.py PAN_D_OUTPUT PAN_SAFETY_OUTPUT
      PAN_D_OUTPUT       what ./pan -d printed (every process's transitions)
      PAN_SAFETY_OUTPUT  what the exhaustive safety run printed (its unreached lists)"""
import re
import sys


def process_name(header):
    name = header.strip()
    return ":init:" if name == "init" else name


def main():
    transitions, safety = (open(path).read() for path in sys.argv[1:3])
    copies = {}  # (location, statement) -> {(process, state)}: every copy of it
    current = None
    for line in transitions.splitlines():
        if line.startswith("proctype ") or line.startswith("claim "):
            current = line.split()[1] if line.startswith("proctype ") else None
            continue
        m = re.match(r"\s*state\s+(\d+) -\(tr\s+\d+\)->.*\] (\S+:\d+) => (.*)$", line)
        if m and current:
            copies.setdefault((m.group(2), m.group(3)), set()).add((current, int(m.group(1))))
    unreached = set()  # (process, state) of every copy never run
    current = None
    for line in safety.splitlines():
        m = re.match(r"unreached in (proctype (\S+)|init|claim)", line)
        if m:
            current = None if m.group(1) == "claim" else process_name(m.group(2) or "init")
            continue
        m = re.match(r'\s+\S+:\d+, state (\d+), ".*"$', line)
        if m and current:
            unreached.add((current, int(m.group(1))))
    if not copies:
        sys.exit("wake-protocol-coverage.py: no transitions in " + sys.argv[1])
    never = sorted(key for key, where in copies.items() if where <= unreached)
    for location, statement in never:
        print(f"{location} {statement}")
    return 1 if never else 0


if __name__ == "__main__":
    sys.exit(main())
