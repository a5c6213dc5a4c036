"""Probes for orchestrators and the drain before a rolling restart, on a 3-node cluster."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pika
import pika.exceptions
import pytest

from tests.cluster.processes import Cluster, ClusterNode, queue_visible, running_cluster
from tests.support.node import wait_for

PERSISTENT = pika.BasicProperties(delivery_mode=2)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with running_cluster(3) as formed:
        yield formed


def probe(node: ClusterNode, name: str) -> tuple[int, dict[str, Any]]:
    """A probe as the kubelet sends it: no credentials."""
    assert node.process is not None
    address = f"http://127.0.0.1:{node.process.ports['mgmt']}/health/{name}"
    try:
        with urllib.request.urlopen(address, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_probes_answer_without_credentials(cluster: Cluster) -> None:
    for node in cluster.nodes:
        for name in ("startup", "ready", "live"):
            assert probe(node, name) == (200, {"status": "ok"})


def test_await_online_nodes(cluster: Cluster) -> None:
    node = cluster.nodes[1]
    assert node.ctl("await_online_nodes", "3").code == 0
    waited = node.ctl("await_online_nodes", "4", "--timeout", "1")
    assert waited.code == 69  # EX_UNAVAILABLE, as rabbitmqctl on a timeout
    assert "3 of 4 nodes were online" in waited.err


def test_drain_moves_leadership_and_clients_and_keeps_confirmed_messages(cluster: Cluster) -> None:
    names = sorted(node.name for node in cluster.nodes)
    drained = cluster.node(cluster.wait_leader(names))  # the leader: leadership must move
    home = next(node for node in cluster.nodes if node is not drained)
    assert home.process is not None and drained.process is not None
    with pika.BlockingConnection(pika.URLParameters(home.process.url)) as conn:
        conn.channel().queue_declare("drained", durable=True)
    wait_for(lambda: queue_visible(drained.process.url, "drained"), 10, 0.05)  # type: ignore[union-attr]

    confirmed: list[int] = []
    closed_with: list[tuple[int, str]] = []
    started = threading.Event()

    def publish_until_closed() -> None:
        with pika.BlockingConnection(pika.URLParameters(drained.process.url)) as conn:  # type: ignore[union-attr]
            channel = conn.channel()
            channel.confirm_delivery()
            try:
                for number in range(100_000):
                    channel.basic_publish("", "drained", str(number).encode(), PERSISTENT)
                    confirmed.append(number)
                    started.set()
            except pika.exceptions.ConnectionClosedByBroker as closed:
                closed_with.append((closed.reply_code, closed.reply_text))

    publisher = threading.Thread(target=publish_until_closed, daemon=True)
    publisher.start()
    assert started.wait(15)
    result = drained.ctl("drain", "--timeout", "10")
    assert result.code == 0, result.err
    assert "Closed 1 client connections" in result.out
    publisher.join(15)
    assert closed_with == [(320, "CONNECTION_FORCED - Node was put into maintenance mode")]
    # Not ready any more (the Service stops sending clients), but alive and answering.
    assert probe(drained, "ready") == (503, {"status": "failed", "reason": "the node is draining"})
    assert probe(drained, "live")[0] == 200
    with pytest.raises(pika.exceptions.AMQPConnectionError):
        pika.BlockingConnection(pika.URLParameters(drained.process.url))
    assert cluster.wait_leader(names) != drained.name
    # Every publish the drained node confirmed is in the queue on its home node.
    with pika.BlockingConnection(pika.URLParameters(home.process.url)) as conn:
        count = conn.channel().queue_declare("drained", passive=True).method.message_count
    assert count >= len(confirmed) > 0
    # The drained node stops as the pod would, then comes back and serves again.
    assert drained.terminate() == 0
    drained.start(same_ports=True)
    wait_for(lambda: probe(drained, "ready")[0] == 200, 30, 0.1)


def test_a_node_in_a_minority_is_live_but_not_ready(cluster: Cluster) -> None:
    alone, *others = cluster.nodes
    for node in others:
        node.kill()
    _, body = wait_for(lambda: (answer := probe(alone, "ready"))[0] == 503 and answer, 30, 0.2)
    assert "reaches 1 of 3 members" in body["reason"]
    assert probe(alone, "live") == (200, {"status": "ok"})
    for node in others:
        node.start(same_ports=True)
    wait_for(lambda: probe(alone, "ready")[0] == 200, 30, 0.2)
