#!/usr/bin/env python3
"""expect_read_error.py REPLAY TRACE: the trace's first line is `# expect: LINE: message`;
fairpool-replay must refuse the trace with exactly `TRACE:LINE: message` on stderr and
exit status 2, and print nothing on stdout."""
import subprocess
import sys

replay, path = sys.argv[1], sys.argv[2]
with open(path, "rb") as f:
    first = f.readline().decode("utf-8", "replace").rstrip("\r\n")
prefix = "# expect: "
if not first.startswith(prefix):
    sys.exit(f"{path}: first line must be '{prefix}LINE: message'")
expected = f"{path}:{first[len(prefix):]}"
run = subprocess.run([replay, path], capture_output=True, text=True, errors="replace")
problems = []
if run.returncode != 2:
    problems.append(f"exit status {run.returncode}, expected 2")
if run.stderr.strip() != expected:
    problems.append(f"stderr {run.stderr.strip()!r}, expected {expected!r}")
if run.stdout:
    problems.append(f"unexpected stdout {run.stdout[:200]!r}")
if problems:
    sys.exit("\n".join(problems))
print(f"ok: {expected}")
