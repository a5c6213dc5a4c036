"""Cluster benchmarks on loopback: Raft metadata, failover, catch-up, and AMQP queue declares.

Metadata commands per second and latency (one node against three), leader failover after
SIGKILL, a new node catching up on 100k metadata entries, and AMQP queue declares and deletes on
a lone node (a one-voter Raft), a 3-node cluster (client on the leader, then on a follower) and
RabbitMQ.

Each node is a `leveret server` process. For the metadata part the load generator is a gRPC
client of the cluster port (it signs its calls with the cluster secret, as a tool) that submits
`declare_queue` commands to the leader; for the declares part it is one pika client speaking
AMQP. `--only PART` runs one part; `--write` puts the figures of the parts that ran in
bench/RESULTS.md, between this script's own markers (the rest of the file is left as it is).

    .venv/bin/python -m bench.cluster_bench --write
    .venv/bin/python -m bench.cluster_bench --only declares --write
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import functools
import json
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pika

from bench.brokers import running_rabbitmq
from bench.sections import RESULTS, marks, replace_section, section_inside
from cluster.remote import Remote
from cluster.secret import CallSigner
from cluster.transport import PeerChannels
from proto.metadata_schema import AddVhost, DeclareQueue, SetGlobalParameter, encode_command
from tests.support.rabbitmq_cluster import start_rabbitmq_cluster

REPO = Path(__file__).resolve().parents[1]

SECTION = "cluster_bench.py"
START_MARK, END_MARK = marks(SECTION)
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

    @property
    def amqp_url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.ports['amqp']}/%2F"

    def get_json(self, path: str) -> Any:
        request = urllib.request.Request(f"http://127.0.0.1:{self.ports['mgmt']}{path}")
        request.add_header("Authorization", "Basic " + base64.b64encode(b"guest:guest").decode())
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    def status(self) -> dict[str, Any]:
        return dict(self.get_json("/api/cluster/status"))

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
    await remote.submit(address, encode_command(AddVhost(name=VHOST)), 10)
    next_number = first
    latencies: list[float] = []

    async def worker() -> None:
        nonlocal next_number
        while next_number < first + count:
            number = next_number
            next_number += 1
            command = DeclareQueue(
                vhost=VHOST,
                name=f"q{number}",
                durable=True,
                exclusive_owner=None,
                home_node="b1@localhost",
            )
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
                command = SetGlobalParameter(name="failover-probe", value=number)
                try:
                    await remote.submit(node.address, encode_command(command), 0.5)
                except Exception:  # noqa: BLE001 - no leader yet: try again
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


# -- AMQP declares -----------------------------------------------------------------------------

DECLARED_PREFIX = "bench-declare-"
DECLARES_WARM_UP = 50
# One target's warm-up, declares and deletes must end within this, or the run is abandoned (the
# broker is stopped, which ends a client stuck waiting for a reply).
DECLARES_SECONDS_LIMIT = 300.0
# How long the other nodes of a cluster may take to list what the client declared.
_LISTED_SECONDS = 60.0

T = TypeVar("T")


@dataclass
class DeclareRun:
    """One client declaring durable queues one at a time on `setup`, declaring them again
    (each a redeclaration that changes nothing), then deleting them."""

    setup: str
    client_on: str
    declares: Load
    deletes: Load
    redeclares: Load | None = None


def queue_names(prefix: str, count: int) -> list[str]:
    return [f"{prefix}{number}" for number in range(count)]


def timed_each(names: list[str], operation: Callable[[str], object]) -> Load:
    """`operation` on each name in turn, each one timed: it returns once the broker answered."""
    latencies: list[float] = []
    started = time.perf_counter()
    for name in names:
        before = time.perf_counter()
        operation(name)
        latencies.append(time.perf_counter() - before)
    return Load(len(names), time.perf_counter() - started, latencies)


def declare_then_delete(
    url: str, count: int, after_declares: Callable[[list[str]], None] | None = None
) -> tuple[Load, Load, Load]:
    """Declare `count` durable queues one at a time on one channel, declare them again, then
    delete them one at a time; a warm-up round of the same first, not measured. Returns the
    declares, redeclares and deletes. `after_declares` runs after the declares, unmeasured."""
    connection = pika.BlockingConnection(pika.URLParameters(url))
    try:
        channel = connection.channel()

        def declare(name: str) -> object:
            return channel.queue_declare(name, durable=True)

        def delete(name: str) -> object:
            return channel.queue_delete(name)

        warm_up = queue_names(DECLARED_PREFIX + "warm-up-", DECLARES_WARM_UP)
        timed_each(warm_up, declare)
        timed_each(warm_up, delete)
        names = queue_names(DECLARED_PREFIX, count)
        declares = timed_each(names, declare)
        if after_declares is not None:
            after_declares(names)
        redeclares = timed_each(names, declare)
        deletes = timed_each(names, delete)
    finally:
        if connection.is_open:
            connection.close()
    return declares, redeclares, deletes


def within(seconds: float, work: Callable[[], T]) -> T:
    """`work()` on a thread of its own; TimeoutError when it has not returned after `seconds`
    (the caller then stops the broker, which ends the thread's wait for a reply)."""
    outcome: list[T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            outcome.append(work())
        except BaseException as error:  # noqa: BLE001 - handed to the waiting thread
            failure.append(error)

    thread = threading.Thread(target=run, name="bench-declares-client", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise TimeoutError(f"the declares client did not finish within {seconds:.0f} s")
    if failure:
        raise failure[0]
    return outcome[0]


def listed_queues(node: BenchNode) -> set[str]:
    return {queue["name"] for queue in node.get_json("/api/queues/%2F")}


def lists_all(node: BenchNode, names: set[str]) -> bool:
    return names <= listed_queues(node)


def wait_listed_everywhere(nodes: list[BenchNode], names: list[str]) -> None:
    """Every node of the cluster knows every queue the client declared (a sanity check: the
    figures would mean little if the declares had stayed on one node)."""
    for node in nodes:
        wait(functools.partial(lists_all, node, set(names)), _LISTED_SECONDS, 0.2)


def measure_declares_lone_node(count: int) -> DeclareRun:
    cluster = BenchCluster(1).form()
    try:
        node = cluster.nodes[0]
        declares, redeclares, deletes = within(
            DECLARES_SECONDS_LIMIT, lambda: declare_then_delete(node.amqp_url, count)
        )
        return DeclareRun(
            "Leveret, 1 node (one-voter Raft)", "the node", declares, deletes, redeclares
        )
    finally:
        cluster.stop()


def measure_declares_clustered(count: int) -> list[DeclareRun]:
    """The same 3-node cluster, the client first on the leader, then on a follower."""
    cluster = BenchCluster(3).form()
    try:
        leader = cluster.leader()
        assert leader is not None
        follower = next(node for node in cluster.nodes if node is not leader)
        runs: list[DeclareRun] = []
        check = functools.partial(wait_listed_everywhere, cluster.nodes)
        for node, client_on in ((leader, "the leader"), (follower, "a follower")):
            work = functools.partial(declare_then_delete, node.amqp_url, count, check)
            declares, redeclares, deletes = within(DECLARES_SECONDS_LIMIT, work)
            runs.append(
                DeclareRun("Leveret, 3 nodes (Raft)", client_on, declares, deletes, redeclares)
            )
        if cluster.leader() is not leader:
            raise RuntimeError("the leader changed during the run; its figures are mixed")
        return runs
    finally:
        cluster.stop()


def rabbitmq_version() -> str:
    """The Debian package's version, e.g. 3.10.8 ("" when dpkg does not know it)."""
    try:
        completed = subprocess.run(
            ["dpkg-query", "--show", "--showformat=${Version}", "rabbitmq-server"],
            check=False, capture_output=True, text=True, timeout=30,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return completed.stdout.strip().split("-")[0]


def measure_declares_rabbitmq(count: int) -> DeclareRun:
    with running_rabbitmq(cpu=None) as broker:
        declares, redeclares, deletes = within(
            DECLARES_SECONDS_LIMIT, lambda: declare_then_delete(broker.url, count)
        )
    product = " ".join(part for part in ("RabbitMQ", rabbitmq_version()) if part)
    return DeclareRun(f"{product}, 1 node", "the node", declares, deletes, redeclares)


def measure_declares_rabbitmq_cluster(count: int) -> DeclareRun:
    """A 3-node RabbitMQ cluster (joined with rabbitmqctl), the client on a node that joined."""
    cluster = start_rabbitmq_cluster(3)
    try:
        joined = cluster.nodes[1]
        declares, redeclares, deletes = within(
            DECLARES_SECONDS_LIMIT, lambda: declare_then_delete(joined.url, count)
        )
    finally:
        cluster.stop()
    product = " ".join(part for part in ("RabbitMQ", rabbitmq_version()) if part)
    return DeclareRun(f"{product}, 3 nodes", "a joined node", declares, deletes, redeclares)


def measure_declares(count: int) -> list[DeclareRun]:
    runs = [measure_declares_lone_node(count), *measure_declares_clustered(count)]
    return [*runs, measure_declares_rabbitmq(count), measure_declares_rabbitmq_cluster(count)]


# -- report ------------------------------------------------------------------------------------

# The parts of this script's section, in the order they appear; each can be run (and rewritten)
# on its own.
PARTS = ("metadata", "declares")
_PART_MARK = re.compile(r"<!-- cluster_bench\.py part: ([\w-]+) -->\n?")


def part_mark(name: str) -> str:
    return f"<!-- cluster_bench.py part: {name} -->"


def machine_line() -> list[str]:
    return [
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores shared "
        "with",
        f"other engineers' work, Python {platform.python_version()}; "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
    ]  # fmt: skip


def render_metadata(
    throughput: dict[tuple[int, int], Load], failovers: list[Failover], catch_up: CatchUp
) -> str:
    lines = [
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
        f"the same new leader (status polled over HTTP) after {statistics.median(elected):.2f} s "
        f"median ({min(elected):.2f}-{max(elected):.2f} s);",
        f"first successful write {statistics.median(written):.2f} s median "
        f"({min(written):.2f}-{max(written):.2f} s).",
        "",
        f"A new node joining a 3-node cluster that holds {catch_up.entries:,} metadata entries",
        f"(written in {catch_up.write_seconds:.1f} s): a voter after {catch_up.join_seconds:.2f} "
        "s, caught up",
        f"(applied the leader's commit index) after {catch_up.catch_up_seconds:.2f} s; it received "
        "a",
        f"{catch_up.snapshot_bytes / 1e6:.1f} MB snapshot and the entries after it.",
        "",
        *machine_line(),
    ]  # fmt: skip
    return "\n".join(lines)


def render_declares(runs: list[DeclareRun], load_average: float | None = None) -> str:
    """The declares part; `load_average` is the machine's 1-minute load when the runs began."""
    count = max((run.declares.commands for run in runs), default=0)
    about = (
        "Written by `bench/cluster_bench.py --only declares`. One pika client (BlockingConnection)"
        f" declares {count:,} durable queues one at a time, each waiting for its declare-ok,"
        " declares them again (redeclares: each changes nothing, and a clustered Leveret node"
        " answers it from its own view after a read barrier, Raft's ReadIndex), then"
        " deletes them one at a time, each waiting for its delete-ok (after a warm-up of"
        f" {DECLARES_WARM_UP} queues declared and deleted). Rates are operations per second over"
        " each phase; latencies are per operation. A lone Leveret node is a cluster of one: it"
        " appends each change to its Raft log and fsyncs it before answering. A clustered node"
        " submits the change to the Raft leader (a follower forwards it on its Raft stream); the"
        " leader appends it, a majority fsyncs it, and the node the client is on answers once it"
        " has applied the entry. Queues"
        " live on the client's node (client-local). Between the declares and the deletes,"
        " unmeasured, every node of the cluster is checked to list every queue. RabbitMQ runs"
        " as a single node of Debian's rabbitmq-server with one scheduler (`+S 1:1`), and as a"
        " 3-node cluster (joined with rabbitmqctl join_cluster, default schedulers) with the"
        " client on a node that joined. No process is pinned to a core."
    )
    lines = [
        "## AMQP queue declares and deletes",
        "",
        *textwrap.wrap(about, 95, break_on_hyphens=False),
        "",
        "| Broker | Client on | declares/s | p50 ms | p99 ms | deletes/s | p50 ms | p99 ms "
        "| redeclares/s | p50 ms |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for run in runs:
        cells = [run.setup, run.client_on]
        for load in (run.declares, run.deletes):
            cells += [
                f"{load.rate:,.0f}", f"{load.percentile(0.50):.2f}", f"{load.percentile(0.99):.2f}"
            ]  # fmt: skip
        again = run.redeclares
        cells += [f"{again.rate:,.0f}", f"{again.percentile(0.50):.2f}"] if again else ["", ""]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", *machine_line()]
    if load_average is not None:
        lines[-1] += f" Load average (1 min) as the runs began: {load_average:.2f}."
    return "\n".join(lines)


def split_parts(section: str) -> dict[str, str]:
    """The parts of a section as written before, by name. Text before any part mark (all of a
    section written before parts had marks) is the metadata part."""
    pieces = _PART_MARK.split(section)
    parts = {"metadata": pieces[0].strip("\n")} if pieces[0].strip() else {}
    for name, body in zip(pieces[1::2], pieces[2::2], strict=True):
        parts[name] = body.strip("\n")
    return parts


def join_parts(parts: dict[str, str]) -> str:
    """This script's whole section, its parts in the order of PARTS, between its markers."""
    known = [name for name in PARTS if name in parts]
    others = sorted(name for name in parts if name not in PARTS)
    bodies = [f"{part_mark(name)}\n{parts[name]}" for name in known + others]
    return f"{START_MARK}\n" + "\n\n".join(bodies) + f"\n{END_MARK}"


def merge_section(text: str, parts: dict[str, str]) -> str:
    """`text` (all of RESULTS.md) with `parts` written into this script's section; the parts
    not measured this time, and everything outside the markers, stay as they were."""
    earlier = split_parts(section_inside(text, SECTION) or "")
    return replace_section(text, SECTION, join_parts({**earlier, **parts}))


def write_parts(parts: dict[str, str], path: Path = RESULTS) -> None:
    text = path.read_text() if path.exists() else ""
    path.write_text(merge_section(text, parts))


def run_metadata(args: argparse.Namespace) -> str:
    throughput: dict[tuple[int, int], Load] = {}
    for size in (1, 3):
        for concurrency in (1, 32):
            count = args.count if concurrency > 1 else max(args.count // 5, 100)
            throughput[(size, concurrency)] = measure_throughput(size, count, concurrency)
            load = throughput[(size, concurrency)]
            print(
                f"{size} node(s), {concurrency} in flight: {load.rate:,.0f}/s p50 "
                f"{load.percentile(0.5):.2f} ms p99 {load.percentile(0.99):.2f} ms",
                flush=True,
            )
    failovers = measure_failover(args.failovers)
    print("failovers:", failovers, flush=True)
    catch_up = measure_catch_up(args.entries)
    print("catch-up:", catch_up, flush=True)
    return render_metadata(throughput, failovers, catch_up)


def run_declares(args: argparse.Namespace) -> str:
    load_average = os.getloadavg()[0]
    runs = measure_declares(args.declares)
    for run in runs:
        print(
            f"{run.setup}, client on {run.client_on}: "
            f"declares {run.declares.rate:,.0f}/s p50 {run.declares.percentile(0.5):.2f} ms p99 "
            f"{run.declares.percentile(0.99):.2f} ms; "
            f"deletes {run.deletes.rate:,.0f}/s p50 {run.deletes.percentile(0.5):.2f} ms p99 "
            f"{run.deletes.percentile(0.99):.2f} ms; redeclares "
            + (f"{run.redeclares.rate:,.0f}/s" if run.redeclares else "-"),
            flush=True,
        )  # fmt: skip
    return render_declares(runs, load_average)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=5000, help="commands per throughput run")
    parser.add_argument("--entries", type=int, default=100_000, help="entries before the catch-up")
    parser.add_argument("--failovers", type=int, default=5)
    parser.add_argument(
        "--declares", type=int, default=1000, help="queues declared, then deleted, per AMQP run"
    )
    parser.add_argument(
        "--only", choices=PARTS, action="append", help="run only this part (may be repeated)"
    )
    parser.add_argument("--write", action="store_true", help="update bench/RESULTS.md")
    args = parser.parse_args(argv)
    runners = {"metadata": run_metadata, "declares": run_declares}
    parts = {name: runners[name](args) for name in PARTS if name in (args.only or PARTS)}
    print(join_parts(parts))
    if args.write:
        write_parts(parts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
