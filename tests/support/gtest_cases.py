"""Runs a script test's cases and prints GoogleTest-style result lines, which
tools/run-tests counts case by case: `run_cases("suite", [case, ...])` calls each case
(a function that raises AssertionError on failure), prints `[       OK ] suite.case (N ms)`
or `[  FAILED  ] suite.case (N ms)` with the reason, and exits 1 if any failed. Any
other exception fails its case too (a hung or unrunnable subprocess), not the run."""
import sys
import time


def run_cases(suite, cases):
    failed = 0
    for case in cases:
        start = time.monotonic()
        try:
            case()
            reason = None
        except AssertionError as e:
            reason = str(e)
        except Exception as e:  # noqa: BLE001 (any other failure is this case's)
            reason = f"{type(e).__name__}: {e}"
        ms = int((time.monotonic() - start) * 1000)
        if reason is None:
            print(f"[       OK ] {suite}.{case.__name__} ({ms} ms)")
        else:
            failed += 1
            print(f"[  FAILED  ] {suite}.{case.__name__} ({ms} ms)\n    {reason}")
    sys.exit(1 if failed else 0)
