"""A real RabbitMQ cluster on loopback: nodes started by the tests, joined with rabbitmqctl.

The nodes share one Erlang cookie and one epmd of their own, so that they find each other and
nothing else on the machine; the second and later nodes run `rabbitmqctl join_cluster` to the
first, as an operator would. Used to run the same scenario on a RabbitMQ cluster and on Leveret.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.rabbitmq import (
    ClusterMembership,
    RabbitMQStartError,
    RabbitNode,
    _find_epmd,
    _terminate,
    die_with_parent,
    find_rabbitmq,
    start_own_epmd,
    start_rabbitmq,
)

_CTL_TIMEOUT = 120.0


@dataclass
class RabbitCluster:
    """Running RabbitMQ nodes that form one cluster; `stop()` ends all of them and their epmd."""

    nodes: list[RabbitNode]
    epmd_process: subprocess.Popen[bytes] | None
    _stopped: bool = field(default=False, repr=False)

    def ctl(self, node: RabbitNode, *args: str) -> str:
        """Run rabbitmqctl against `node` and return its output (raises on failure)."""
        return rabbitmqctl(node, *args)

    def running_nodes(self, via: RabbitNode) -> list[str]:
        status = json.loads(self.ctl(via, "cluster_status", "--formatter", "json"))
        return sorted(status["running_nodes"])

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        try:
            for node in reversed(self.nodes):
                node.stop()
        finally:
            if self.epmd_process is not None:
                _terminate(self.epmd_process, 10.0)


def rabbitmqctl(node: RabbitNode, *args: str) -> str:
    """rabbitmqctl with the node's own environment (its cookie, epmd port and node name)."""
    ctl = Path(find_rabbitmq() or "rabbitmq-server").with_name("rabbitmqctl")
    result = subprocess.run(
        [str(ctl), "-n", node.node_name, *args],
        env=node.launch_env,
        capture_output=True,
        timeout=_CTL_TIMEOUT,
        check=False,
    )
    if result.returncode != 0:
        raise RabbitMQStartError(
            f"rabbitmqctl {' '.join(args)} failed with status {result.returncode}: "
            f"{result.stdout.decode(errors='replace')}{result.stderr.decode(errors='replace')}"
        )
    return result.stdout.decode(errors="replace")


def start_rabbitmq_cluster(size: int = 3, extra_config: Sequence[str] = ()) -> RabbitCluster:
    """Start `size` RabbitMQ nodes and join the others to the first; return once all run."""
    if find_rabbitmq() is None:
        raise RabbitMQStartError("rabbitmq-server is not installed")
    epmd = _find_epmd()
    if epmd is None:
        raise RabbitMQStartError("epmd is not installed")
    epmd_process, epmd_port = start_own_epmd(die_with_parent(), epmd)
    cluster = RabbitCluster([], epmd_process)
    try:
        membership = ClusterMembership(uuid.uuid4().hex.upper(), epmd_port)
        for _ in range(size):
            node = start_rabbitmq(cluster=membership, extra_config=extra_config)
            cluster.nodes.append(node)
        seed = cluster.nodes[0]
        for node in cluster.nodes[1:]:
            rabbitmqctl(node, "stop_app")
            rabbitmqctl(node, "join_cluster", seed.node_name)
            rabbitmqctl(node, "start_app")
        expected = sorted(node.node_name for node in cluster.nodes)
        running = cluster.running_nodes(seed)
        if running != expected:
            raise RabbitMQStartError(f"the cluster runs {running}, expected {expected}")
    except BaseException:
        cluster.stop()
        raise
    return cluster


@contextmanager
def rabbitmq_cluster(size: int = 3) -> Iterator[RabbitCluster]:
    cluster = start_rabbitmq_cluster(size)
    try:
        yield cluster
    finally:
        cluster.stop()
