"""`leveret local-cluster`: a cluster of nodes on this machine in one command (`make cluster`).

Node 1 starts a cluster and the others join it; each node has its own data directory and ports
(AMQP, management and cluster ports counted up from the bases, or free ports with --base 0), and
they share the user's cluster secret. Ctrl-C (or SIGTERM) stops every node cleanly.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

START_TIMEOUT_SECONDS = 60.0
STOP_TIMEOUT_SECONDS = 30.0
_POLL_SECONDS = 0.05


def add_local_cluster_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("local-cluster", help="run a cluster of nodes on this machine")
    parser.add_argument("--nodes", type=int, default=3, help="how many nodes (default 3)")
    parser.add_argument(
        "--dir", default="./leveret-cluster", help="where the nodes keep their data and logs"
    )
    parser.add_argument(
        "--base",
        type=int,
        default=1,
        help="node N listens on 5671+N (AMQP), 15671+N and 25671+N; 0 picks free ports",
    )


class _Stop(Exception):
    """A signal asked the cluster to stop."""


class _StopRequest:
    """Set by SIGINT or SIGTERM, checked where stopping is safe: a handler that raised at any
    point could leave a node just started out of the list of nodes to stop."""

    def __init__(self) -> None:
        self.requested = False
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self._set)

    def _set(self, _signal: int, _frame: FrameType | None) -> None:
        self.requested = True

    def check(self) -> None:
        if self.requested:
            raise _Stop


def run_local_cluster(args: argparse.Namespace) -> int:
    root = Path(args.dir).resolve()
    nodes: list[subprocess.Popen[bytes]] = []
    stop = _StopRequest()
    try:
        seed: str | None = None
        first_url = ""
        for number in range(1, args.nodes + 1):
            ports = _start(root, number, args.base, seed, nodes, stop)
            if seed is None:
                seed = f"127.0.0.1:{ports['cluster']}"
                first_url = f"http://guest:guest@127.0.0.1:{ports['mgmt']}"
            print(
                f"node {number}: leveret-{number}@localhost  amqp {ports['amqp']}  "
                f"management http://127.0.0.1:{ports['mgmt']}  cluster {ports['cluster']}",
                flush=True,
            )
        print(
            f"{args.nodes} nodes running (data and logs in {root}); Ctrl-C stops them\n"
            f"try: {_leveret_command()} ctl --url {first_url} cluster_status",
            flush=True,
        )
        while all(process.poll() is None for process in nodes):
            stop.check()
            time.sleep(_POLL_SECONDS)
        print("a node stopped on its own; stopping the others", file=sys.stderr)
        return 1
    except _Stop:
        return 0
    except RuntimeError as error:
        print(f"leveret: {error}", file=sys.stderr)
        return 69
    finally:
        _stop_all(nodes)


def _start(
    root: Path,
    number: int,
    base: int,
    seed: str | None,
    nodes: list[subprocess.Popen[bytes]],
    stop: _StopRequest,
) -> dict[str, int]:
    """Start node `number`, added to `nodes` at once (so that a Ctrl-C while it starts stops it
    too), and wait for its ports (RuntimeError if they do not come)."""
    directory = root / f"node{number}"
    directory.mkdir(parents=True, exist_ok=True)
    ports_file = directory / "ports.json"
    ports_file.unlink(missing_ok=True)
    offset = base + number - 1 if base else None
    command = [
        sys.executable, "-m", "leveret", "server",
        "--node-name", f"leveret-{number}@localhost",
        "--bind", "127.0.0.1",
        "--data-dir", str(directory / "data"),
        "--amqp-port", str(5671 + offset if offset is not None else 0),
        "--mgmt-port", str(15671 + offset if offset is not None else 0),
        "--cluster-port", str(25671 + offset if offset is not None else 0),
        "--ports-file", str(ports_file),
        "--log-file", str(directory / "node.log"),
        *(["--join", seed] if seed else []),
    ]  # fmt: skip
    # Each node in a session of its own: Ctrl-C reaches this command, which stops them in order.
    process = subprocess.Popen(command, start_new_session=True, stdin=subprocess.DEVNULL)
    nodes.append(process)
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while not ports_file.exists():
        stop.check()
        if process.poll() is not None:
            raise RuntimeError(f"node {number} exited with status {process.returncode}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"node {number} did not start within {START_TIMEOUT_SECONDS:.0f} s")
        time.sleep(_POLL_SECONDS)
    return dict(json.loads(ports_file.read_text()))


def _leveret_command() -> str:
    """How to call `leveret` from here: the one beside this Python (.venv/bin/leveret after
    `make`), which need not be on PATH."""
    beside = Path(sys.executable).with_name("leveret")
    if not beside.exists():
        return "leveret"
    try:
        return str(beside.relative_to(Path.cwd()))
    except ValueError:
        return str(beside)


def _stop_all(nodes: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM to every node, then wait for all of them together; kill any still running."""
    for process in reversed(nodes):
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_SECONDS
    for process in nodes:
        try:
            process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            print(f"node with PID {process.pid} did not stop in time; killing it", file=sys.stderr)
            process.kill()
            process.wait()
