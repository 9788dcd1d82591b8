#!/usr/bin/env python3
"""Recordings of released flight recorders (tests/traces/recordings/) still replay bit for
bit: every segment alone, the segments on each side of a gap as one chain, and the whole
directory stops at the gap with exit status 2 and the gap's notice.

    recording_replay_test.py FAIRPOOL_REPLAY RECORDINGS_DIR"""
import os
import subprocess
import sys

replay, recordings = sys.argv[1], sys.argv[2]
failures = []


def check(args, status, text=None):
    run = subprocess.run([replay, "--check", *args], capture_output=True, text=True)
    printed = run.stdout + run.stderr
    if run.returncode != status or (text is not None and text not in printed):
        failures.append(f"--check {' '.join(args)}: exit {run.returncode} (want {status}); {printed[-400:]}")


v01 = os.path.join(recordings, "v0.1")
segments = sorted(os.path.join(v01, f) for f in os.listdir(v01) if f.endswith(".trace"))
if len(segments) != 8:
    failures.append(f"{v01}: {len(segments)} segments, want 8")
for segment in segments:
    check([segment], 0)
check(segments[:6], 0)  # up to the gap at the end of segment 5
check(segments[6:], 0)  # from the fresh snapshot after it
check([v01], 2, "segment-00000005.trace:102: gap: 89 events were lost here; "
                "the recording cannot be replayed across it")
for f in failures:
    print("FAILED:", f)
print(f"{len(segments) + 3 - len(failures)} checks passed, {len(failures)} failed")
sys.exit(1 if failures else 0)
