"""Counting instructions with callgrind (Debian's valgrind), for the bench scripts."""
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
