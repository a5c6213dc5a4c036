"""Cluster metadata benchmarks on loopback: commands per second and latency (one node against
three), leader failover after SIGKILL, and a new node catching up on 100k metadata entries.

Each node is a `leveret server` process; the load generator is a gRPC client of the cluster
port (it signs its calls with the cluster secret, as a tool) that submits `declare_queue`
commands to the leader. `--write` puts the figures in bench/RESULTS.md, between this script's
own markers (the rest of the file is left as it is).

    .venv/bin/python -m bench.cluster_bench --write
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cluster.metadata import encode_command
from cluster.remote import Remote
from cluster.secret import CallSigner
from cluster.transport import PeerChannels

REPO = Path(__file__).resolve().parents[1]

RESULTS = REPO / "bench" / "RESULTS.md"
START_MARK = "<!-- cluster_bench.py: start -->"
END_MARK = "<!-- cluster_bench.py: end -->"
SECRET = b"cluster benchmark secret"
VHOST = "bench"


# -- nodes -------------------------------------------------------------------------------------


class BenchNode:
    """One `leveret server` process with a fixed name and data directory."""

    def __init__(self, name: str, root: Path, secret_file: Path) -> None:
        self.name = name
        self.dir = root / name
        self.dir.mkdir(parents=True, exist_ok=True)
        self.secret_file = secret_file
        self.proc: subprocess.Popen[bytes] | None = None
        self.ports: dict[str, int] = {}

    def start(self, join: list[str] | None = None, same_ports: bool = False) -> BenchNode:
        ports_file = self.dir / "ports.json"
        ports_file.unlink(missing_ok=True)
        cluster_port = str(self.ports["cluster"]) if same_ports and self.ports else "0"
        args = [
            sys.executable, "-m", "leveret", "server", "--node-name", self.name,
            "--bind", "127.0.0.1", "--amqp-port", "0", "--mgmt-port", "0",
            "--cluster-port", cluster_port, "--data-dir", str(self.dir / "data"),
            "--ports-file", str(ports_file), "--cluster-secret-file", str(self.secret_file),
            "--log-level", "warning",
        ]  # fmt: skip
        for seed in join or []:
            args += ["--join", seed]
        with open(self.dir / "node.log", "ab") as log:
            self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
        wait(lambda: ports_file.exists() or self.proc.poll() is not None, 30)  # type: ignore[union-attr]
        if self.proc.poll() is not None:
            raise RuntimeError(f"{self.name} exited; see {self.dir / 'node.log'}")
        self.ports = json.loads(ports_file.read_text())
        return self

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.ports['cluster']}"

    def status(self) -> dict[str, Any]:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.ports['mgmt']}/api/cluster/status"
        )
        request.add_header("Authorization", "Basic " + base64.b64encode(b"guest:guest").decode())
        with urllib.request.urlopen(request, timeout=10) as response:
            return dict(json.loads(response.read()))

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.kill()

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


def wait(condition: Callable[[], Any], timeout: float, interval: float = 0.01) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"condition not met within {timeout}s")
        time.sleep(interval)


class BenchCluster:
    def __init__(self, size: int) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="leveret-cluster-bench-")
        self.root = Path(self._tmp.name)
        self.secret_file = self.root / "secret"
        self.secret_file.write_bytes(SECRET + b"\n")
        self.nodes = [
            BenchNode(f"b{number}@localhost", self.root, self.secret_file)
            for number in range(1, size + 1)
        ]

    def form(self) -> BenchCluster:
        self.nodes[0].start()
        for node in self.nodes[1:]:
            node.start(join=[self.nodes[0].address])
        names = sorted(node.name for node in self.nodes)
        wait(lambda: self.leader(names) is not None, 60, 0.05)
        return self

    def leader(self, voters: list[str] | None = None) -> BenchNode | None:
        """The leader all running nodes agree on (with `voters`, when given)."""
        names = set()
        for node in self.nodes:
            if not node.alive:
                continue
            try:
                raft = node.status()["raft"]
            except OSError:
                return None
            if voters is not None and sorted(raft["voters"]) != voters:
                return None
            names.add(raft["leader"])
        if len(names) != 1 or None in names:
            return None
        name = names.pop()
        return next((node for node in self.nodes if node.name == name and node.alive), None)

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()
        self._tmp.cleanup()


# -- load --------------------------------------------------------------------------------------


@dataclass
class Load:
    commands: int
    seconds: float
    latencies: list[float] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.commands / self.seconds

    def percentile(self, fraction: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] * 1000


def tool_channels() -> PeerChannels:
    # No address of its own: the cluster admits it as a tool, not a member.
    return PeerChannels(CallSigner(SECRET, "cluster-bench", ""))


async def submit_many(address: str, first: int, count: int, concurrency: int) -> Load:
    channels = tool_channels()
    remote = Remote(channels)
    await remote.submit(address, encode_command({"op": "add_vhost", "name": VHOST}), 10)
    next_number = first
    latencies: list[float] = []

    async def worker() -> None:
        nonlocal next_number
        while next_number < first + count:
            number = next_number
            next_number += 1
            command = {
                "op": "declare_queue",
                "vhost": VHOST,
                "name": f"q{number}",
                "durable": True,
                "home_node": "b1@localhost",
            }
            started = time.perf_counter()
            reply = await remote.submit(address, encode_command(command), 30)
            latencies.append(time.perf_counter() - started)
            assert reply["status"] in ("created", "exists"), reply

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.perf_counter() - started
    await channels.close()
    return Load(count, elapsed, latencies)


def measure_throughput(size: int, count: int, concurrency: int) -> Load:
    cluster = BenchCluster(size).form()
    try:
        leader = cluster.leader()
        assert leader is not None
        asyncio.run(submit_many(leader.address, 0, 200, concurrency))  # warm-up
        return asyncio.run(submit_many(leader.address, 1000, count, concurrency))
    finally:
        cluster.stop()


# -- failover ----------------------------------------------------------------------------------


@dataclass
class Failover:
    elected: float
    first_write: float


async def first_write_after(nodes: list[BenchNode], started: float) -> float:
    """Seconds from `started` until a write through any of `nodes` succeeds."""
    channels = tool_channels()
    remote = Remote(channels)
    number = 0
    try:
        while time.perf_counter() - started < 30:
            for node in nodes:
                number += 1
                command = {"op": "set_global_parameter", "name": "failover-probe", "value": number}
                try:
                    await remote.submit(node.address, encode_command(command), 0.5)
                except Exception:  # noqa: BLE001, S112 - no leader yet: try again
                    continue
                return time.perf_counter() - started
        raise TimeoutError("no write succeeded within 30 s of the kill")
    finally:
        await channels.close()


def kill_leader_once(cluster: BenchCluster, names: list[str]) -> Failover:
    leader = cluster.leader(names)
    assert leader is not None
    survivors = [node for node in cluster.nodes if node is not leader]
    first_write: list[float] = []
    started = time.perf_counter()
    leader.kill()
    writer = threading.Thread(
        target=lambda: first_write.append(asyncio.run(first_write_after(survivors, started)))
    )
    writer.start()
    wait(lambda: (new := cluster.leader()) is not None and new is not leader, 30, 0.005)
    elected = time.perf_counter() - started
    writer.join(40)
    leader.start(same_ports=True)
    wait(lambda: cluster.leader(names) is not None, 30, 0.05)
    return Failover(elected, first_write[0])


def measure_failover(rounds: int) -> list[Failover]:
    cluster = BenchCluster(3).form()
    names = sorted(node.name for node in cluster.nodes)
    try:
        return [kill_leader_once(cluster, names) for _ in range(rounds)]
    finally:
        cluster.stop()


# -- catch-up ----------------------------------------------------------------------------------


@dataclass
class CatchUp:
    entries: int
    write_seconds: float
    join_seconds: float
    catch_up_seconds: float
    snapshot_bytes: int


def measure_catch_up(entries: int) -> CatchUp:
    cluster = BenchCluster(3).form()
    try:
        leader = cluster.leader()
        assert leader is not None
        load = asyncio.run(submit_many(leader.address, 0, entries, 64))
        target = leader.status()["raft"]["commit_index"]
        newcomer = BenchNode("b4@localhost", cluster.root, cluster.secret_file)
        cluster.nodes.append(newcomer)
        started = time.perf_counter()
        newcomer.start(join=[leader.address])
        wait(lambda: newcomer.name in leader.status()["raft"]["voters"], 120, 0.01)
        joined = time.perf_counter() - started
        wait(lambda: newcomer.status()["raft"]["applied_index"] >= target, 300, 0.01)
        caught_up = time.perf_counter() - started
        snapshot = newcomer.dir / "data" / "cluster" / "raft" / "raft.snapshot"
        size = snapshot.stat().st_size if snapshot.exists() else 0
        return CatchUp(entries, load.seconds, joined, caught_up, size)
    finally:
        cluster.stop()


# -- report ------------------------------------------------------------------------------------


def render(
    throughput: dict[tuple[int, int], Load], failovers: list[Failover], catch_up: CatchUp
) -> str:
    lines = [
        START_MARK,
        "## Cluster metadata (Raft over gRPC)",
        "",
        "Written by `bench/cluster_bench.py`. Nodes are `leveret server` processes on loopback",
        "(default timings: 100 ms Raft tick, election timeout 1-2 s, snapshot every 10,000",
        "entries, fsync on every Raft batch). The client submits `declare_queue` commands to the",
        "leader over gRPC and waits for each reply (applied on the leader after a majority",
        "fsynced it); concurrency is the number of commands in flight.",
        "",
        "| Cluster | Concurrency | commands/s | p50 ms | p99 ms |",
        "|---|--:|--:|--:|--:|",
    ]
    for (size, concurrency), load in sorted(throughput.items()):
        lines.append(
            f"| {size} node{'s' if size > 1 else ''} | {concurrency} | {load.rate:,.0f} | "
            f"{load.percentile(0.50):.2f} | {load.percentile(0.99):.2f} |"
        )
    elected = [f.elected for f in failovers]
    written = [f.first_write for f in failovers]
    lines += [
        "",
        f"Leader failover after SIGKILL (3 nodes, {len(failovers)} rounds): both survivors report",
        f"the same new leader (status polled over HTTP) after {statistics.median(elected):.2f} s median ({min(elected):.2f}-{max(elected):.2f} s);",
        f"first successful write {statistics.median(written):.2f} s median ({min(written):.2f}-{max(written):.2f} s).",
        "",
        f"A new node joining a 3-node cluster that holds {catch_up.entries:,} metadata entries",
        f"(written in {catch_up.write_seconds:.1f} s): a voter after {catch_up.join_seconds:.2f} s, caught up",
        f"(applied the leader's commit index) after {catch_up.catch_up_seconds:.2f} s; it received a",
        f"{catch_up.snapshot_bytes / 1e6:.1f} MB snapshot and the entries after it.",
        "",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores shared with",
        f"other engineers' work, Python {platform.python_version()}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
        END_MARK,
    ]  # fmt: skip
    return "\n".join(lines)


def write_section(section: str, path: Path = RESULTS) -> None:
    text = path.read_text() if path.exists() else ""
    if START_MARK in text and END_MARK in text:
        before, rest = text.split(START_MARK, 1)
        after = rest.split(END_MARK, 1)[1]
        text = before + section + after
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=5000, help="commands per throughput run")
    parser.add_argument("--entries", type=int, default=100_000, help="entries before the catch-up")
    parser.add_argument("--failovers", type=int, default=5)
    parser.add_argument("--write", action="store_true", help="update bench/RESULTS.md")
    args = parser.parse_args(argv)
    throughput: dict[tuple[int, int], Load] = {}
    for size in (1, 3):
        for concurrency in (1, 32):
            count = args.count if concurrency > 1 else max(args.count // 5, 100)
            throughput[(size, concurrency)] = measure_throughput(size, count, concurrency)
            load = throughput[(size, concurrency)]
            print(
                f"{size} node(s), {concurrency} in flight: {load.rate:,.0f}/s p50 {load.percentile(0.5):.2f} ms p99 {load.percentile(0.99):.2f} ms",
                flush=True,
            )
    failovers = measure_failover(args.failovers)
    print("failovers:", failovers, flush=True)
    catch_up = measure_catch_up(args.entries)
    print("catch-up:", catch_up, flush=True)
    section = render(throughput, failovers, catch_up)
    print(section)
    if args.write:
        write_section(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
