"""A 3-node RabbitMQ cluster and a 3-node Leveret cluster behind one interface, and the steps
the cross-node side-by-side scenarios are made of."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import pika
import pika.exceptions

from tests.cluster.processes import Cluster, queue_visible
from tests.interop.test_side_by_side import Transcript
from tests.support.node import wait_for
from tests.support.rabbitmq_cluster import RabbitCluster

PERSISTENT = pika.BasicProperties(delivery_mode=2)


class ThreeNodes(Protocol):
    """A running 3-node cluster of either broker, as the scenarios use it."""

    name: str

    def node_names(self) -> list[str]: ...

    def url(self, index: int) -> str: ...

    def stop_node(self, index: int) -> None: ...

    def start_node(self, index: int) -> None: ...


class RabbitThree:
    name = "rabbitmq"

    def __init__(self, cluster: RabbitCluster) -> None:
        self.cluster = cluster

    def node_names(self) -> list[str]:
        return [node.node_name for node in self.cluster.nodes]

    def url(self, index: int) -> str:
        return self.cluster.nodes[index].url

    def stop_node(self, index: int) -> None:
        self.cluster.nodes[index].stop_server()

    def start_node(self, index: int) -> None:
        self.cluster.nodes[index].start_server()


class LeveretThree:
    name = "leveret"

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster

    def node_names(self) -> list[str]:
        return [node.name for node in self.cluster.nodes]

    def url(self, index: int) -> str:
        process = self.cluster.nodes[index].process
        assert process is not None
        return process.url

    def stop_node(self, index: int) -> None:
        self.cluster.nodes[index].kill()

    def start_node(self, index: int) -> None:
        self.cluster.nodes[index].start(same_ports=True)


def connect(url: str) -> pika.BlockingConnection:
    return pika.BlockingConnection(pika.URLParameters(url))


def anonymised(value: Any, names: list[str]) -> Any:
    """The transcript with node names replaced by A, B and C, as the brokers name nodes apart."""
    if isinstance(value, str):
        for letter, name in zip("ABC", names, strict=True):
            value = value.replace(name, letter)
        return value
    if isinstance(value, tuple | list):
        return type(value)(anonymised(item, names) for item in value)
    return value


def attempt(conn: pika.BlockingConnection, seen: Transcript, action: Callable[[Any], Any]) -> None:
    channel = conn.channel()
    try:
        seen.append(("ok", action(channel)))
    except pika.exceptions.ChannelClosedByBroker as closed:
        seen.append(("channel-closed", closed.reply_code, closed.reply_text))
    except pika.exceptions.UnroutableError as unroutable:
        seen.append(("returned", [m.method.reply_code for m in unroutable.messages]))
    if channel.is_open:
        channel.close()


def declare_on(three: ThreeNodes, index: int, queue: str, **arguments: Any) -> None:
    """Declare `queue` afresh through node `index` (its home, client-local), and wait until
    every node knows it."""
    conn = connect(three.url(index))
    try:
        channel = conn.channel()
        channel.queue_delete(queue)
        channel.queue_declare(queue, **arguments)
    finally:
        conn.close()
    for other in range(3):
        wait_for(lambda other=other: queue_visible(three.url(other), queue), 10, 0.02)


def declare_on_a(three: ThreeNodes, queue: str, **arguments: Any) -> None:
    declare_on(three, 0, queue, **arguments)
