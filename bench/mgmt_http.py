"""Requests per second of the management API (GET /api/overview and /api/queues with 1,000
queues), one keep-alive client, for one or more checkouts of Leveret on the same machine.

    python -m bench.mgmt_http [--source DIR ...] [--seconds 10] [--queues 1000]

Each --source is a directory holding a `leveret` package (default: this checkout); its node runs
with that code on PYTHONPATH, so two versions are measured in one run.
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pika

AUTH = {"Authorization": "Basic " + base64.b64encode(b"guest:guest").decode()}
PATHS = ("/api/overview", "/api/queues")


def start_node(source: Path, directory: Path) -> tuple[subprocess.Popen[bytes], dict[str, int]]:
    ports_file = directory / "ports.json"
    env = {**os.environ, "PYTHONPATH": str(source)}
    command = [sys.executable, "-m", "leveret", "server", "--bind", "127.0.0.1"]
    for flag in ("--amqp-port", "--mgmt-port", "--cluster-port"):
        command += [flag, "0"]
    command += ["--data-dir", str(directory / "data"), "--ports-file", str(ports_file)]
    log = open(directory / "node.log", "wb")  # noqa: SIM115 - the node writes it until it stops
    node = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while not ports_file.exists():
        if node.poll() is not None or time.monotonic() > deadline:
            node.kill()
            raise RuntimeError(f"the node in {source} did not start")
        time.sleep(0.05)
    return node, json.loads(ports_file.read_text())


def declare_queues(amqp_port: int, count: int) -> None:
    params = pika.URLParameters(f"amqp://guest:guest@127.0.0.1:{amqp_port}/")
    connection = pika.BlockingConnection(params)
    channel = connection.channel()
    for index in range(count):
        channel.queue_declare(f"bench.q{index:04d}")
    connection.close()


def requests_per_second(port: int, path: str, seconds: float) -> float:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    done = 0
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        connection.request("GET", path, headers=AUTH)
        response = connection.getresponse()
        response.read()
        assert response.status == 200, response.status
        done += 1
    return done / (time.monotonic() - started)


def measure(source: Path, seconds: float, queues: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="leveret-bench-mgmt-") as scratch:
        node, ports = start_node(source, Path(scratch))
        try:
            declare_queues(ports["amqp"], queues)
            requests_per_second(ports["mgmt"], "/api/queues", 1.0)  # warm up
            return {path: requests_per_second(ports["mgmt"], path, seconds) for path in PATHS}
        finally:
            node.terminate()
            node.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", action="append", type=Path)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--queues", type=int, default=1000)
    args = parser.parse_args()
    sources = args.source or [Path(__file__).resolve().parent.parent]
    for source in sources:
        figures = measure(source, args.seconds, args.queues)
        line = ", ".join(f"GET {path} {rate:.1f} req/s" for path, rate in figures.items())
        print(f"{source}: {line}", flush=True)


if __name__ == "__main__":
    main()
