"""Clusters of real `leveret server` processes on loopback, driven through `leveret ctl`."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pika
import pika.exceptions

from tests.support.node import REPO, NodeProcess, wait_for
from tests.support.ports import restartable_ports

CTL_TIMEOUT_SECONDS = 30.0


@dataclass
class CtlResult:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


class ClusterNode:
    """One node process with a stable name and data directory across restarts."""

    def __init__(self, name: str, secret_file: str, join: list[str]) -> None:
        self.name = name
        self._secret_file = secret_file
        self._tmp = tempfile.TemporaryDirectory(prefix=f"leveret-{name.split('@')[0]}-")
        self.data_dir = os.path.join(self._tmp.name, "data")
        self.join = join
        self.process: NodeProcess | None = None
        self.cluster_port = 0

    @property
    def running(self) -> bool:
        return (
            self.process is not None
            and self.process.proc is not None
            and self.process.proc.poll() is None
        )

    def start(
        self, join: list[str] | None = None, same_ports: bool = False, extra: tuple[str, ...] = ()
    ) -> ClusterNode:
        """Start (again); `same_ports` keeps the cluster port of the previous run; `extra`:
        more arguments for `leveret server`."""
        seeds = self.join if join is None else join
        args = ["--node-name", self.name, "--cluster-secret-file", self._secret_file, *extra]
        for seed in seeds:
            args += ["--join", seed]
        port = self.cluster_port if same_ports and self.cluster_port else restartable_ports(1)[0]
        args += ["--cluster-port", str(port)]
        old = self.process
        self.process = NodeProcess(self.data_dir, extra_args=args).start()
        if old is not None:
            old.cleanup()
        self.cluster_port = self.process.ports["cluster"]
        return self

    @property
    def seed(self) -> str:
        """This node's cluster address, for other nodes' --join."""
        return f"127.0.0.1:{self.cluster_port}"

    def ctl(self, *args: str, timeout: float = CTL_TIMEOUT_SECONDS) -> CtlResult:
        assert self.process is not None
        url = f"http://guest:guest@127.0.0.1:{self.process.ports['mgmt']}"
        done = subprocess.run(
            [sys.executable, "-m", "leveret", "ctl", "--url", url, *args],
            capture_output=True,
            check=False,
            text=True,
            timeout=timeout,
            cwd=REPO,
        )
        return CtlResult(done.returncode, done.stdout, done.stderr)

    def status(self) -> dict[str, Any]:
        """`cluster_status --formatter json`, read over HTTP (quicker than a ctl process)."""
        return dict(self.http("GET", "/api/cluster/status"))

    def http(self, method: str, path: str, body: Any = None) -> Any:
        assert self.process is not None
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.process.ports['mgmt']}{path}", data=data, method=method
        )
        request.add_header("Authorization", "Basic " + base64.b64encode(b"guest:guest").decode())
        request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=CTL_TIMEOUT_SECONDS) as response:
            answer = response.read()
            return json.loads(answer) if answer else None

    def submit(self, command: dict[str, Any]) -> CtlResult:
        return self.ctl("submit_cluster_command", json.dumps(command))

    def metadata(self, table: str, local: bool = False) -> Any:
        result = self.ctl("list_cluster_metadata", table, *(["--local"] if local else []))
        assert result.code == 0, result.err
        return result.json()

    def signal(self, sig: signal.Signals) -> None:
        assert self.process is not None and self.process.proc is not None
        self.process.proc.send_signal(sig)

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()

    def terminate(self) -> int:
        assert self.process is not None
        return self.process.terminate()

    def log(self) -> str:
        return self.process.log_tail(200) if self.process is not None else ""

    def cleanup(self) -> None:
        if self.process is not None:
            if self.process.proc is not None and self.process.proc.poll() is None:
                self.process.proc.send_signal(signal.SIGCONT)
            self.process.cleanup()
        self._tmp.cleanup()


class Cluster:
    """N nodes formed with --join (the first bootstraps, the others join it)."""

    def __init__(self, size: int, prefix: str = "n") -> None:
        self.prefix = prefix  # node names are {prefix}1@localhost, {prefix}2@localhost...
        self._tmp = tempfile.TemporaryDirectory(prefix="leveret-cluster-")
        self.secret_file = os.path.join(self._tmp.name, "secret")
        with open(self.secret_file, "w") as file:
            file.write("a secret shared by the test cluster\n")
        self.nodes: list[ClusterNode] = []
        self.size = size

    def form(self) -> Cluster:
        first = ClusterNode(f"{self.prefix}1@localhost", self.secret_file, []).start()
        self.nodes.append(first)
        for number in range(2, self.size + 1):
            node = ClusterNode(f"{self.prefix}{number}@localhost", self.secret_file, [first.seed])
            self.nodes.append(node.start())
        names = sorted(node.name for node in self.nodes)
        wait_for(lambda: self.agreed_leader(names) is not None, 30, 0.1)
        # Every node has heard from every other (gossip), as placement needs.
        wait_for(lambda: all(self.heard_from_all(node, names) for node in self.nodes), 30, 0.05)
        return self

    @staticmethod
    def heard_from_all(node: ClusterNode, names: list[str]) -> bool:
        """Whether `node` runs with every one of `names` and has had its own word (a report,
        hence an incarnation) from each, not only hearsay from the membership table."""
        status = node.status()
        gossip = status["gossip"]
        return sorted(status["running_nodes"]) == names and all(
            gossip.get(name, {}).get("incarnation") for name in names
        )

    def node(self, name: str) -> ClusterNode:
        return next(node for node in self.nodes if node.name == name)

    def running(self) -> list[ClusterNode]:
        return [node for node in self.nodes if node.running]

    def agreed_leader(
        self, voters: list[str], among: list[ClusterNode] | None = None
    ) -> str | None:
        """The leader every node of `among` (default: the running ones) names, with exactly
        `voters` as voters, if they agree and it is one of them."""
        among = among or self.running()
        leaders = set()
        for node in among:
            raft = node.status()["raft"]
            if sorted(raft["voters"]) != voters or raft["leader"] is None:
                return None
            leaders.add(raft["leader"])
        leader = leaders.pop() if len(leaders) == 1 else None
        return leader if leader in {node.name for node in among} else None

    def wait_leader(
        self, voters: list[str], among: list[ClusterNode] | None = None, timeout: float = 20
    ) -> str:
        return str(wait_for(lambda: self.agreed_leader(voters, among), timeout, 0.1))

    def cleanup(self) -> None:
        for node in self.nodes:
            node.cleanup()
        self._tmp.cleanup()

    def logs(self) -> str:
        return "\n".join(f"===== {node.name}\n{node.log()}" for node in self.nodes)


def queue_visible(url: str, queue: str) -> bool:
    """Whether the node at `url` knows `queue` (other nodes apply a declaration a moment after
    the declaring node answers)."""
    with pika.BlockingConnection(pika.URLParameters(url)) as conn:
        try:
            conn.channel().queue_declare(queue, passive=True)
        except pika.exceptions.ChannelClosedByBroker:
            return False
        return True


@contextmanager
def running_cluster(size: int) -> Iterator[Cluster]:
    cluster = Cluster(size)
    try:
        yield cluster.form()
    except BaseException:
        print(cluster.logs())
        raise
    finally:
        cluster.cleanup()
