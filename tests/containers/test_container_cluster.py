"""Three LeveretContainers form a cluster on a Docker network; one cut off from it by
`docker network disconnect` is alive but not ready (a minority), and heals when reconnected."""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack

import pika
import pytest
from testcontainers.core.network import Network

from leveret.testing import LeveretContainer
from tests.containers.published import leveret_container
from tests.support.node import wait_for

NAMES = ("node1", "node2", "node3")


@pytest.fixture
def cluster(leveret_image: str) -> Iterator[tuple[Network, list[LeveretContainer]]]:
    with ExitStack() as stack:
        network = stack.enter_context(Network())
        nodes = []
        secret = "a secret the three containers share"
        for name in NAMES:
            node = (
                leveret_container(leveret_image)
                .with_network(network)
                .with_network_aliases(name)
                .with_env("LEVERET_NODE_NAME", f"leveret@{name}")
                .with_env("LEVERET_JOIN", "node1:25672")  # node1 skips itself and starts
                .with_env("LEVERET_CLUSTER_SECRET_FILE", "/var/lib/leveret/cluster-secret")
                .with_command(
                    [
                        "sh",
                        "-c",
                        f"echo '{secret}' > /var/lib/leveret/cluster-secret && exec leveret server",
                    ]
                )
                .with_kwargs(entrypoint=[])
            )
            nodes.append(stack.enter_context(node))
        yield network, nodes


def probe_inside(node: LeveretContainer, path: str) -> int:
    """A probe from inside the container (the host cannot reach one cut off from its network)."""
    script = (
        "import urllib.request, urllib.error\n"
        "try:\n"
        f"    print(urllib.request.urlopen('http://127.0.0.1:15672{path}', timeout=4).status)\n"
        "except urllib.error.HTTPError as e:\n"
        "    print(e.code)\n"
    )
    code, out = node.get_wrapped_container().exec_run(["python3", "-c", script])
    assert code == 0, out
    return int(out.decode().strip())


def running_nodes(node: LeveretContainer) -> list[str]:
    request = urllib.request.Request(node.get_management_url() + "/api/cluster/status")
    request.add_header("Authorization", "Basic Z3Vlc3Q6Z3Vlc3Q=")  # guest:guest
    with urllib.request.urlopen(request, timeout=10) as response:
        return sorted(json.loads(response.read())["running_nodes"])


def test_a_partitioned_container_is_live_but_not_ready_and_heals(
    cluster: tuple[Network, list[LeveretContainer]],
) -> None:
    network, nodes = cluster
    everyone = sorted(f"leveret@{name}" for name in NAMES)
    for node in nodes:
        wait_for(lambda node=node: running_nodes(node) == everyone, 60, 0.5)
    cut = nodes[2]
    container = cut.get_wrapped_container()
    subprocess.run(
        ["docker", "network", "disconnect", network.name, container.id], check=True, timeout=60
    )
    try:
        wait_for(lambda: probe_inside(cut, "/health/ready") == 503, 60, 0.5)
        assert probe_inside(cut, "/health/live") == 200
        # The majority side goes on: definitions change through it.
        with pika.BlockingConnection(pika.URLParameters(nodes[0].get_connection_url())) as conn:
            conn.channel().queue_declare("while-cut", durable=True)
    finally:
        network.connect(container.id, network_aliases=["node3"])
    wait_for(lambda: probe_inside(cut, "/health/ready") == 200, 60, 0.5)
    wait_for(lambda: running_nodes(nodes[0]) == everyone, 60, 0.5)
    # The healed node learnt what the majority decided while it was cut off.
    script = (
        "import json, urllib.request\n"
        "r = urllib.request.Request('http://127.0.0.1:15672/api/queues/%2F/while-cut')\n"
        "r.add_header('Authorization', 'Basic Z3Vlc3Q6Z3Vlc3Q=')\n"
        "print(json.loads(urllib.request.urlopen(r, timeout=5).read())['name'])\n"
    )
    wait_for(
        lambda: container.exec_run(["python3", "-c", script])[1].decode().strip() == "while-cut",
        30,
        0.5,
    )
