#!/usr/bin/env python3
"""A postgres test that dies leaves no PostgreSQL server and no cluster directory behind:
orphan_test.py HELPER. HELPER (tests/postgres/orphan_helper.cpp) starts a throwaway
cluster (examples/postgres/cluster.hpp) and prints its directory; then its process
group is killed (SIGKILL, as Meson does on a timeout), or it aborts, or it exits
normally. Within 10 s no process of that cluster may remain (the server, its
processes, anything naming the directory) and the directory must be gone; the
helper's stdout and stderr must reach their end. Prints GoogleTest-style result lines
so that tools/run-tests counts each case."""
import os
import pwd
import shutil
import signal
import subprocess
import sys
import time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from gtest_cases import run_cases  # noqa: E402
from processes import alive, children, processes  # noqa: E402

helper = sys.argv[1]
LIMIT = 10.0


def naming(directory):
    """Running processes whose command line names `directory`."""
    out = []
    for pid in processes():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if directory in cmdline and alive(pid):
            out.append(f"{pid}: {cmdline.strip()}")
    return out


def stop_server(directory):
    """Cleans up after a failed case: pg_ctl stop -m immediate as the directory's owner."""
    data = os.path.join(directory, "data")
    if os.path.exists(os.path.join(data, "postmaster.pid")):
        pg_ctl = os.path.join(os.environ.get("FAIRPOOL_PG_BIN") or "/usr/lib/postgresql/15/bin", "pg_ctl")
        command = [pg_ctl, "-D", data, "-m", "immediate", "-w", "stop"]
        if os.geteuid() == 0:
            command = ["runuser", "-u", pwd.getpwuid(os.stat(data).st_uid).pw_name, "--"] + command
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    shutil.rmtree(directory, ignore_errors=True)


def leaves_nothing(mode):
    p = subprocess.Popen([helper, mode], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, start_new_session=True)
    directory = None
    try:
        line = p.stdout.readline().split()
        if len(line) != 2:
            p.wait(timeout=60)
            raise AssertionError(f"the helper did not start a cluster: {p.stderr.read()}")
        directory = line[0]
        with open(os.path.join(directory, "data", "postmaster.pid")) as f:
            postmaster = int(f.readline())
        server = [postmaster] + children(postmaster)
        assert alive(postmaster), "the cluster's server does not run"
        if mode == "wait":
            os.killpg(p.pid, signal.SIGKILL)
        else:
            p.stdin.write("go\n")
            p.stdin.flush()
        code = p.wait(timeout=60)
        if mode == "exit":
            assert code == 0, f"the helper exited with {code}"
        start = time.monotonic()
        try:
            p.communicate(timeout=LIMIT)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the helper's stdout or stderr stayed open {LIMIT:.0f} s after it ended")
        while time.monotonic() - start < LIMIT and (
                any(alive(s) for s in server) or naming(directory) or os.path.exists(directory)):
            time.sleep(0.05)
        left = [s for s in server if alive(s)]
        assert not left, f"the server's processes {left} still run {LIMIT:.0f} s after the helper ended"
        named = naming(directory)
        assert not named, f"processes naming {directory} still run {LIMIT:.0f} s after the helper ended: {named}"
        assert not os.path.exists(directory), f"{directory} still exists {LIMIT:.0f} s after the helper ended"
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        if directory:
            stop_server(directory)


def killed_process_group_leaves_no_server():
    leaves_nothing("wait")


def aborted_test_leaves_no_server():
    leaves_nothing("abort")


def normal_exit_leaves_no_server():
    leaves_nothing("exit")


cases = [killed_process_group_leaves_no_server, aborted_test_leaves_no_server, normal_exit_leaves_no_server]
run_cases("postgres_orphans", cases)
