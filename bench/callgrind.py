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
