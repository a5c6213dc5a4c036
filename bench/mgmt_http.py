"""Requests per second of the management API (GET /api/overview and /api/queues with 1,000
queues), one keep-alive client, for one or more checkouts of Leveret on the same machine.

    python -m bench.mgmt_http [--source DIR ...] [--seconds 10] [--queues 1000]

Each --source is a directory holding a `leveret` package (default: this checkout); its node runs
with that code on PYTHONPATH, so two versions are measured in one run. The nodes run at once and
take turns of one second each, so that a neighbour's load on a shared machine falls on all of
them alike; the node's CPU time per request is reported beside the rate.
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
from dataclasses import dataclass
from pathlib import Path

import pika

AUTH = {"Authorization": "Basic " + base64.b64encode(b"guest:guest").decode()}
PATHS = ("/api/overview", "/api/queues")
TURN_SECONDS = 1.0


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


@dataclass
class Tally:
    requests: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0

    def line(self) -> str:
        rate = self.requests / self.seconds
        cpu = self.cpu_seconds / self.requests * 1000
        return f"{rate:.1f} req/s ({cpu:.2f} ms CPU/req)"


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def turn(connection: http.client.HTTPConnection, path: str, pid: int, tally: Tally) -> None:
    """Requests for one turn (TURN_SECONDS), added to `tally`."""
    cpu = cpu_seconds(pid)
    started = time.monotonic()
    while time.monotonic() - started < TURN_SECONDS:
        connection.request("GET", path, headers=AUTH)
        response = connection.getresponse()
        response.read()
        assert response.status == 200, response.status
        tally.requests += 1
    tally.seconds += time.monotonic() - started
    tally.cpu_seconds += cpu_seconds(pid) - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", action="append", type=Path)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--queues", type=int, default=1000)
    args = parser.parse_args()
    sources = args.source or [Path(__file__).resolve().parent.parent]
    with tempfile.TemporaryDirectory(prefix="leveret-bench-mgmt-") as scratch:
        nodes: list[tuple[Path, subprocess.Popen[bytes], http.client.HTTPConnection]] = []
        try:
            for index, source in enumerate(sources):
                directory = Path(scratch) / str(index)
                directory.mkdir()
                node, ports = start_node(source, directory)
                connection = http.client.HTTPConnection("127.0.0.1", ports["mgmt"], timeout=30)
                nodes.append((source, node, connection))
                declare_queues(ports["amqp"], args.queues)
            tallies = {(index, path): Tally() for index in range(len(nodes)) for path in PATHS}
            for _, node, connection in nodes:
                turn(connection, "/api/queues", node.pid, Tally())  # warm up
            for _ in range(max(1, round(args.seconds / TURN_SECONDS))):
                for path in PATHS:
                    for index, (_, node, connection) in enumerate(nodes):
                        turn(connection, path, node.pid, tallies[(index, path)])
            for index, (source, _, _) in enumerate(nodes):
                line = ", ".join(f"GET {path} {tallies[(index, path)].line()}" for path in PATHS)
                print(f"{source}: {line}", flush=True)
        finally:
            for _, node, _ in nodes:
                node.terminate()
                node.wait(30)


if __name__ == "__main__":
    main()
