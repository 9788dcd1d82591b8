"""Counting instructions with callgrind (Debian's valgrind), for the bench scripts."""
import glob
import os
import re
import subprocess
import sys
import tempfile


def instructions(command, toggle_collect=None):
    """Instructions callgrind collected running `command` (a list), only inside the
    functions matching `toggle_collect` if given."""
    options = [f"--toggle-collect={toggle_collect}"] if toggle_collect else []
    with tempfile.NamedTemporaryFile() as out:
        run = subprocess.run(["valgrind", "--tool=callgrind", *options, f"--callgrind-out-file={out.name}", *command],
                             capture_output=True, text=True, check=True)
    match = re.search(r"Collected : (\d+)", run.stderr)
    if not match:
        sys.exit(f"{command[0]}: no instruction count in callgrind's output:\n" + run.stderr)
    return int(match.group(1))


def instructions_by_thread(command):
    """Instructions callgrind collected running `command`, per thread: a list, the
    main thread's first (--separate-threads=yes writes one file per thread)."""
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "callgrind.out")
        subprocess.run(["valgrind", "--tool=callgrind", "--separate-threads=yes", f"--callgrind-out-file={out}",
                        *command], capture_output=True, text=True, check=True)
        counts = []
        for path in sorted(glob.glob(out + "-*")):
            with open(path) as f:
                totals = [line for line in f if line.startswith(("summary:", "totals:"))]
            if not totals:
                sys.exit(f"{path}: no totals in callgrind's output")
            counts.append(int(totals[-1].split()[1]))
        return counts


# Instructions that lock the memory bus or a cache line: any with a lock prefix, and
# xchg with a memory operand (locked implicitly).
_LOCKED = re.compile(r"(lock\s|xchg\s+%?\w+,\s*-?\w*\(|xchg\s+-?\w*\()")
_locked_addresses = {}  # object file -> set of its locked instructions' addresses


def _locked_in(obj):
    if obj not in _locked_addresses:
        listing = subprocess.run(["objdump", "-d", "--no-show-raw-insn", obj], capture_output=True, text=True,
                                 check=True).stdout
        found = set()
        for line in listing.splitlines():
            m = re.match(r"\s*([0-9a-f]+):\s+(.*)", line)
            if m and _LOCKED.match(m.group(2)):
                found.add(int(m.group(1), 16))
        _locked_addresses[obj] = found
    return _locked_addresses[obj]


def locked_instructions(command):
    """Locked instructions executed running `command` (a list): callgrind's count of
    each instruction (--dump-instr=yes; addresses are relative to their object file),
    matched with objdump's disassembly of each object."""
    with tempfile.NamedTemporaryFile() as out:
        subprocess.run(["valgrind", "--tool=callgrind", "--dump-instr=yes", f"--callgrind-out-file={out.name}",
                        *command], capture_output=True, text=True, check=True)
        counts = {}  # (object, address) -> executions
        names, obj, addr, after_call = {}, None, 0, False
        with open(out.name) as f:
            for raw in f:
                line = raw.rstrip("\n")
                if not line:
                    continue
                if line.startswith(("ob=", "cob=")):
                    m = re.match(r"c?ob=\((\d+)\)(?: (.*))?", line)
                    if m.group(2):
                        names[m.group(1)] = m.group(2)
                    if line.startswith("ob="):
                        obj = names[m.group(1)]
                    continue
                if line.startswith("calls="):
                    after_call = True  # the next cost line is the call's inclusive cost
                    continue
                if line[0] not in "+-0123456789*":
                    continue
                fields = line.split()
                a = fields[0]
                if a.startswith("0x"):
                    addr = int(a, 16)
                elif a[0] in "+-":
                    addr += int(a, 0) if a[1:].startswith("0x") else int(a)
                if after_call:
                    after_call = False
                    continue
                if len(fields) > 2:
                    counts[(obj, addr)] = counts.get((obj, addr), 0) + int(fields[2])
    total = 0
    for o in {o for o, _ in counts}:
        if not os.path.isfile(o):  # "???": code callgrind could not place (the vDSO)
            continue
        locked = _locked_in(o)
        total += sum(c for (oo, a), c in counts.items() if oo == o and a in locked)
    return total
