#!/usr/bin/env python3
"""tools/run-tests always ends with its "N passed, N failed" line, and a non-zero exit
status on any failure: run_tests_summary_test.py RUN_TESTS SCRATCH_DIR. Runs a copy of
RUN_TESTS in SCRATCH_DIR with stand-ins for tools/install-deps, the three step tools,
meson and ninja (nothing is built). Prints GoogleTest-style result lines so that
tools/run-tests counts each case."""
import json
import os
import shutil
import subprocess
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".", "support"))
from gtest_cases import run_cases  # noqa: E402

run_tests, scratch = sys.argv[1], os.path.abspath(sys.argv[2])

# meson: `setup DIR` makes DIR/build.ninja; `introspect` lists nothing; `test -C DIR`
# writes DIR/meson-logs/testlog.json from $STANDIN_LOGS/DIR if there is one, else nothing,
# and exits with $STANDIN_TEST_STATUS.
MESON = """#!/bin/sh
case $1 in
  setup) mkdir -p "$2" && touch "$2/build.ninja" ;;
  introspect) echo '[]' ;;
  test) if [ -f "$STANDIN_LOGS/$3" ]; then mkdir -p "$3/meson-logs" && cp "$STANDIN_LOGS/$3" "$3/meson-logs/testlog.json"; fi
        exit "${STANDIN_TEST_STATUS:-0}" ;;
esac
"""
VARIANTS = ["build", "build-clang", "build-tsan", "build-fuzz"]


def testlog(ok, failed):
    """One GoogleTest program's testlog.json line with `ok` passed and `failed` failed cases."""
    out = "".join(f"[       OK ] s.ok{i} (1 ms)\n" for i in range(ok))
    out += "".join(f"[  FAILED  ] s.bad{i} (1 ms)\n" for i in range(failed))
    return json.dumps({"name": "t", "result": "FAIL" if failed else "OK", "stdout": out}) + "\n"


def run(case, install_status=0, logs=None, test_status=0, stale=(), broken_python=False):
    """Runs the copy with install-deps exiting `install_status` and meson test writing
    logs[variant] (a variant not in logs gets no testlog.json; one in `stale` has a
    passing one left from an earlier run), and with a python3 that fails if
    `broken_python`; returns (status, stdout lines, stderr)."""
    root = os.path.join(scratch, case)
    shutil.rmtree(root, ignore_errors=True)
    for d in ["tools", "bin", "logs"] + [f"{v}/meson-logs" for v in stale]:
        os.makedirs(os.path.join(root, d))
    for variant in stale:
        with open(os.path.join(root, variant, "meson-logs", "testlog.json"), "w") as f:
            f.write(testlog(5, 0))
    shutil.copy(run_tests, os.path.join(root, "tools", "run-tests"))
    stand_ins = {"tools/install-deps": f"#!/bin/sh\necho 'install-deps: stand-in'\nexit {install_status}\n",
             "tools/run-clang-tidy": "#!/bin/sh\nexit 0\n", "tools/check-coverage": "#!/bin/sh\nexit 0\n",
             "tools/check-library-only": "#!/bin/sh\nexit 0\n",
             "bin/meson": MESON, "bin/ninja": "#!/bin/sh\nexit 0\n"}
    if broken_python:
        stand_ins["bin/python3"] = "#!/bin/sh\nexit 1\n"
    for path, text in stand_ins.items():
        with open(os.path.join(root, path), "w") as f:
            f.write(text)
        os.chmod(os.path.join(root, path), 0o755)
    for variant, text in (logs or {}).items():
        with open(os.path.join(root, "logs", variant), "w") as f:
            f.write(text)
    env = dict(os.environ, PATH=os.path.join(root, "bin") + ":" + os.environ["PATH"],
               STANDIN_LOGS=os.path.join(root, "logs"), STANDIN_TEST_STATUS=str(test_status))
    env.pop("FAIRPOOL_SETUP", None)
    out = subprocess.run([os.path.join(root, "tools", "run-tests")], cwd=root, env=env, capture_output=True,
                         text=True, timeout=120)
    return out.returncode, out.stdout.splitlines(), out.stderr


def all_logs_present_and_passing():
    status, lines, err = run("passing", logs={v: testlog(2, 0) for v in VARIANTS})
    assert lines and lines[-1] == "11 passed, 0 failed", (lines[-3:], err)  # 4 x 2 + the three steps
    assert status == 0, (status, err)


def failed_install_still_ends_with_the_line():
    status, lines, err = run("install", install_status=1)
    assert lines and lines[-1] == "0 passed, 1 failed", (lines[-3:], err)
    assert status != 0, status


def missing_testlog_counts_as_a_failure():
    logs = {v: testlog(1, 0) for v in VARIANTS if v not in ("build-tsan", "build-fuzz")}
    status, lines, err = run("missing", logs=logs, test_status=0)
    assert lines and lines[-1] == "5 passed, 2 failed", (lines[-3:], err)  # 2 logs + 3 steps; 2 missing
    assert status != 0, status


def stale_testlog_is_not_counted():
    logs = {v: testlog(1, 0) for v in VARIANTS if v != "build-tsan"}
    status, lines, err = run("stale", logs=logs, stale=["build-tsan"])
    assert lines and lines[-1] == "6 passed, 1 failed", (lines[-3:], err)
    assert status != 0, status


def failing_cases_are_counted():
    logs = {v: testlog(1, 0) for v in VARIANTS}
    logs["build"] = testlog(3, 2)
    status, lines, err = run("failing", logs=logs, test_status=1)
    assert lines and lines[-1] == "9 passed, 2 failed", (lines[-3:], err)
    assert status != 0, status


def failed_count_still_ends_with_a_line():
    status, lines, err = run("python", logs={v: testlog(1, 0) for v in VARIANTS}, broken_python=True)
    assert lines and lines[-1] == "3 passed, 4 failed", (lines[-3:], err)  # the steps; each variant one failure
    assert status != 0, status


cases = [all_logs_present_and_passing, failed_install_still_ends_with_the_line, missing_testlog_counts_as_a_failure,
         stale_testlog_is_not_counted, failing_cases_are_counted, failed_count_still_ends_with_a_line]
run_cases("run_tests_summary", cases)
