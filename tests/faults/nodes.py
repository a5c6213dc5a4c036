"""Leveret nodes, one per namespace of a NetLab, each bound to its namespace's address."""

from __future__ import annotations

import base64
import ctypes
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from tests.faults.netlab import NetLab
from tests.support.node import REPO

# The same ports in every namespace: each node has an address of its own.
AMQP_PORT, MGMT_PORT, CLUSTER_PORT, DATA_PORT = 5672, 15672, 25672, 25673
_START_SECONDS = 30.0
_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """A node outlives no harness, even one killed with SIGKILL (there is no cleanup then)."""
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class LabNode:
    """One node in namespace `index`, with a stable name and data directory across restarts."""

    def __init__(self, lab: NetLab, index: int, workdir: str, secret_file: str) -> None:
        self.lab, self.index = lab, index
        self.address = lab.address(index)
        self.name = f"n{index + 1}@{self.address}"
        self.data_dir = os.path.join(workdir, f"n{index + 1}")
        self.log_path = os.path.join(workdir, f"n{index + 1}.log")
        self.ports_file = os.path.join(workdir, f"n{index + 1}.ports")
        self.secret_file = secret_file
        self.proc: subprocess.Popen[bytes] | None = None
        self.paused = False

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@{self.address}:{AMQP_PORT}/"

    @property
    def seed(self) -> str:
        return f"{self.address}:{CLUSTER_PORT}"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def launch(self, join: list[str]) -> None:
        """Start the process; `wait_started` waits until it accepts connections."""
        assert not self.running, f"{self.name} already runs"
        if os.path.exists(self.ports_file):
            os.unlink(self.ports_file)
        args = [
            *self.lab.exec_prefix(self.index),
            *(sys.executable, "-m", "leveret", "server", "--node-name", self.name),
            *("--bind", self.address, "--data-dir", self.data_dir),
            *("--amqp-port", str(AMQP_PORT), "--mgmt-port", str(MGMT_PORT)),
            *("--cluster-port", str(CLUSTER_PORT), "--data-port", str(DATA_PORT)),
            *("--cluster-secret-file", self.secret_file, "--ports-file", self.ports_file),
        ]
        for seed in join:
            args += ["--join", seed]
        # Clients connect from the root namespace, through the bridge: guest must be allowed.
        env = {**os.environ, "LEVERET_LOOPBACK_USERS": ""}
        with open(self.log_path, "ab") as log:
            log.write(f"\n===== start {time.strftime('%H:%M:%S')}\n".encode())
            log.flush()
            self.proc = subprocess.Popen(
                args,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=REPO,
                env=env,
                # Started from the harness's main thread: the parent the signal follows.
                preexec_fn=die_with_parent,
            )
        self.paused = False

    def wait_started(self, timeout: float = _START_SECONDS) -> None:
        deadline = time.monotonic() + timeout
        while not os.path.exists(self.ports_file):
            if self.proc is None or self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} did not start in {timeout}s:\n{self.log_tail()}")
            time.sleep(0.05)

    def kill(self) -> None:
        """SIGKILL (a paused node dies as well) and reap it."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.paused = False

    def pause(self) -> None:
        if self.running:
            assert self.proc is not None
            self.proc.send_signal(signal.SIGSTOP)
            self.paused = True

    def resume(self) -> None:
        if self.running and self.paused:
            assert self.proc is not None
            self.proc.send_signal(signal.SIGCONT)
        self.paused = False

    def http(self, method: str, path: str, timeout: float = 3.0, body: Any = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            f"http://{self.address}:{MGMT_PORT}{path}", data=data, method=method
        )
        request.add_header("Authorization", "Basic " + base64.b64encode(b"guest:guest").decode())
        request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=timeout) as response:
            answer = response.read()
            return json.loads(answer) if answer else None

    def status(self) -> dict[str, Any] | None:
        """The node's cluster status, or None if it does not answer now."""
        if not self.running or self.paused:
            return None
        try:
            return dict(self.http("GET", "/api/cluster/status"))
        except (OSError, ValueError):
            return None

    def log_tail(self, lines: int = 60) -> str:
        try:
            text = Path(self.log_path).read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


class LabCluster:
    """`size` nodes in the namespaces of `lab`; the first starts the cluster, the rest join."""

    def __init__(self, lab: NetLab) -> None:
        self.lab = lab
        self._tmp = tempfile.TemporaryDirectory(prefix=f"leveret-faults-{lab.prefix}-")
        self.workdir = self._tmp.name
        self.secret_file = os.path.join(self.workdir, "secret")
        Path(self.secret_file).write_text("the fault harness's cluster secret\n")
        os.chmod(self.secret_file, 0o600)
        self.nodes = [LabNode(lab, i, self.workdir, self.secret_file) for i in range(lab.size)]

    @property
    def names(self) -> list[str]:
        return sorted(node.name for node in self.nodes)

    def join_list(self, node: LabNode) -> list[str]:
        """The first node starts the cluster (and restarts from its own data); the others
        join it."""
        return [] if node.index == 0 else [self.nodes[0].seed]

    def form(self, timeout: float = 60) -> None:
        first = self.nodes[0]
        first.launch([])
        first.wait_started()
        for node in self.nodes[1:]:
            node.launch(self.join_list(node))
            node.wait_started()
        self.wait_healthy(timeout)

    def start(self, node: LabNode) -> None:
        node.launch(self.join_list(node))

    def healthy(self) -> str | None:
        """Why the cluster is not whole yet, or None once every node runs, every node names the
        same leader with every member a voter, and every node sees every other running."""
        leaders = set()
        for node in self.nodes:
            status = node.status()
            if status is None:
                return f"{node.name} does not answer"
            raft = status["raft"]
            if sorted(raft["voters"]) != self.names:
                return f"{node.name} has voters {raft['voters']}"
            if sorted(status["running_nodes"]) != self.names:
                return f"{node.name} sees running {status['running_nodes']}"
            leaders.add(raft["leader"])
        if len(leaders) != 1 or None in leaders:
            return f"leaders named: {leaders}"
        return None

    def wait_healthy(self, timeout: float) -> float:
        """Seconds until `healthy`; RuntimeError naming the last reason after `timeout`."""
        started = time.monotonic()
        reason = self.healthy()
        while reason is not None:
            if time.monotonic() - started > timeout:
                raise RuntimeError(f"the cluster did not heal in {timeout}s: {reason}")
            time.sleep(0.2)
            reason = self.healthy()
        return time.monotonic() - started

    def stop(self) -> None:
        for node in self.nodes:
            node.kill()

    def logs(self, lines: int = 80) -> str:
        return "\n".join(f"===== {node.name}\n{node.log_tail(lines)}" for node in self.nodes)

    def cleanup(self) -> None:
        self.stop()
        self._tmp.cleanup()
