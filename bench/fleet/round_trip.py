#!/usr/bin/env python3
"""The uncontended round trip's instructions with a budget client on and off (callgrind),
as bench rows: {"scenario": "fleet/round_trip", "design": "client_on"|"client_off",
"metric": "instructions_per_cycle", ...}. Each runs N and 2N cycles; the difference over
N cancels the start. The client refreshes every second against a real redis-server
started here, its budget established first (no learning period).

    bench/fleet/round_trip.py BUILD_DIR [--cycles N]"""
import json
import os
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from callgrind import instructions  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def command(port, *args):
    with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
        s.sendall(("*%d\r\n" % len(args) + "".join("$%d\r\n%s\r\n" % (len(a), a) for a in args)).encode())
        s.recv(4096)


def main():
    build = sys.argv[1]
    n = int(sys.argv[sys.argv.index("--cycles") + 1]) if "--cycles" in sys.argv else 20_000
    program = f"{build}/bench/fleet_round_trip"
    port = free_port()
    redis = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                              "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(500):
            try:
                command(port, "PING")
                break
            except OSError:
                time.sleep(0.02)

        def on(cycles):
            command(port, "FLUSHALL")
            command(port, "HSET", "{round-trip}:meta", "budget", "4", "epoch", "1", "version", "0",
                    "learning_until", "0")
            return instructions([program, str(cycles), "--redis-port", str(port)])

        def off(cycles):
            return instructions([program, str(cycles)])

        for design, run in (("client_off", off), ("client_on", on)):
            per = (run(2 * n) - run(n)) / n
            print(json.dumps({"scenario": "fleet/round_trip", "design": design, "metric": "instructions_per_cycle",
                              "value": round(per, 1), "unit": "instructions"}))
    finally:
        redis.kill()
        redis.wait()


if __name__ == "__main__":
    main()
