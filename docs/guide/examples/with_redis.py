#!/usr/bin/env python3
"""Runs a guide program with a redis-server of its own: with_redis.py REDIS_SERVER PROGRAM.

The server listens on a free loopback port (no persistence) and is killed afterwards;
the program gets the port as its one argument and its exit status is this script's."""
import socket
import subprocess
import sys
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    server, program = sys.argv[1], sys.argv[2]
    if not server:
        sys.exit("redis-server is required (install the Debian package redis-server: tools/install-deps)")
    port = free_port()
    redis = subprocess.Popen([server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(500):
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.1):
                    break
            except OSError:
                time.sleep(0.02)
        sys.exit(subprocess.run([program, str(port)], timeout=60).returncode)
    finally:
        redis.kill()
        redis.wait()


if __name__ == "__main__":
    main()
