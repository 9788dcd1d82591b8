#!/usr/bin/env python3
"""A redis test that dies leaves no redis-server behind: orphan_test.py HELPER REDIS_SERVER.
HELPER (tests/redis/orphan_helper.cpp) starts a redis-server through
tools/demo/redis_process and is then killed (SIGKILL) or aborts. Within 10 s its
redis-server must be gone, and the helper's stderr must reach its end (an orphan
holding it made Meson wait out the test's whole timeout). Prints GoogleTest-style
result lines so that tools/run-tests counts each case."""
import os
import signal
import subprocess
import sys
import time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from gtest_cases import run_cases  # noqa: E402
from processes import alive, children  # noqa: E402

helper, redis_server = sys.argv[1], sys.argv[2]
LIMIT = 10.0


def died_with_its_redis(mode):
    assert redis_server and os.access(redis_server, os.X_OK), \
        f"redis-server is required (tools/install-deps); FAIRPOOL_REDIS_SERVER='{redis_server}'"
    p = subprocess.Popen([helper, mode, redis_server], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    servers = []
    try:
        port = p.stdout.readline().strip()
        if not port.isdigit():
            p.wait(timeout=LIMIT)
            raise AssertionError(f"the helper did not start redis-server: {p.stderr.read()}")
        servers = children(p.pid)
        assert servers, "no child process of the helper after it started redis-server"
        if mode == "wait":
            p.kill()
        else:
            p.stdin.write("go\n")
            p.stdin.flush()
        p.wait(timeout=LIMIT)
        start = time.monotonic()
        try:
            p.communicate(timeout=LIMIT)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the helper's stderr stayed open {LIMIT:.0f} s after it died "
                                 f"(held by its redis-server, pid {servers})")
        while any(alive(s) for s in servers) and time.monotonic() - start < LIMIT:
            time.sleep(0.05)
        left = [s for s in servers if alive(s)]
        assert not left, f"redis-server (pid {left}, port {port}) still runs {LIMIT:.0f} s after the helper died"
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        for s in servers:
            if alive(s):
                os.kill(s, signal.SIGKILL)


def killed_test_leaves_no_redis_server():
    died_with_its_redis("wait")


def aborted_test_leaves_no_redis_server():
    died_with_its_redis("abort")


cases = [killed_test_leaves_no_redis_server, aborted_test_leaves_no_redis_server]
run_cases("redis_orphans", cases)
