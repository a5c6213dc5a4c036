"""The same cross-node scenarios on a 3-node RabbitMQ cluster and a 3-node Leveret cluster.

A queue lives on node A; clients use it through B and C. RabbitMQ's transcripts are also pinned
here as written, so a change on either side shows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol

import pika
import pika.exceptions
import pytest

from tests.cluster.processes import Cluster, queue_visible, running_cluster
from tests.interop.test_side_by_side import Transcript
from tests.support.node import wait_for
from tests.support.rabbitmq import find_rabbitmq
from tests.support.rabbitmq_cluster import RabbitCluster, start_rabbitmq_cluster

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


@pytest.fixture(scope="module")
def rabbitmq_three() -> Iterator[RabbitThree]:
    if find_rabbitmq() is None:
        pytest.fail("Debian's rabbitmq-server is needed for the cluster comparison")
    cluster = start_rabbitmq_cluster(3)
    try:
        yield RabbitThree(cluster)
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def leveret_three() -> Iterator[LeveretThree]:
    with running_cluster(3) as cluster:
        yield LeveretThree(cluster)


def _connect(url: str) -> pika.BlockingConnection:
    return pika.BlockingConnection(pika.URLParameters(url))


def _anonymised(value: Any, names: list[str]) -> Any:
    """The transcript with node names replaced by A, B and C, as the brokers name nodes apart."""
    if isinstance(value, str):
        for letter, name in zip("ABC", names, strict=True):
            value = value.replace(name, letter)
        return value
    if isinstance(value, tuple | list):
        return type(value)(_anonymised(item, names) for item in value)
    return value


def _attempt(conn: pika.BlockingConnection, seen: Transcript, action: Callable[[Any], Any]) -> None:
    channel = conn.channel()
    try:
        seen.append(("ok", action(channel)))
    except pika.exceptions.ChannelClosedByBroker as closed:
        seen.append(("channel-closed", closed.reply_code, closed.reply_text))
    except pika.exceptions.UnroutableError as unroutable:
        seen.append(("returned", [m.method.reply_code for m in unroutable.messages]))
    if channel.is_open:
        channel.close()


def _declare_on_a(three: ThreeNodes, queue: str, **arguments: Any) -> None:
    conn = _connect(three.url(0))
    try:
        channel = conn.channel()
        channel.queue_delete(queue)
        channel.queue_declare(queue, **arguments)
    finally:
        conn.close()
    for index in (1, 2):
        wait_for(lambda index=index: queue_visible(three.url(index), queue), 10, 0.02)


def routed_across_nodes(three: ThreeNodes) -> Transcript:
    """Declared through A, published with confirms through B, read through C."""
    seen: Transcript = []
    queue = "sbs-cluster-routed"
    _declare_on_a(three, queue, durable=True)
    publisher = _connect(three.url(1))
    try:

        def publish(channel: Any) -> str:
            channel.confirm_delivery()
            for body in (b"one", b"two", b"three"):
                channel.basic_publish("", queue, body, PERSISTENT)
            return "confirmed"

        _attempt(publisher, seen, publish)
    finally:
        publisher.close()
    consumer = _connect(three.url(2))
    try:
        _attempt(
            consumer, seen, lambda c: c.queue_declare(queue, passive=True).method.message_count
        )

        def get_one(channel: Any) -> Any:
            method, _properties, body = channel.basic_get(queue, auto_ack=True)
            return body, method.message_count

        _attempt(consumer, seen, get_one)

        def consume_rest(channel: Any) -> list[bytes]:
            channel.basic_qos(prefetch_count=1)
            got: list[bytes] = []
            for method, _properties, body in channel.consume(queue, inactivity_timeout=5):
                if method is None:
                    break
                got.append(body)
                channel.basic_ack(method.delivery_tag)
                if len(got) == 2:
                    break
            channel.cancel()
            return got

        _attempt(consumer, seen, consume_rest)
    finally:
        consumer.close()
    return seen


def home_node_down(three: ThreeNodes) -> Transcript:
    """A's queues while A is down, seen through B; then A comes back with its durable queue."""
    seen: Transcript = []
    durable, transient = "sbs-cluster-durable", "sbs-cluster-transient"
    _declare_on_a(three, durable, durable=True)
    _declare_on_a(three, transient)
    conn = _connect(three.url(0))
    channel = conn.channel()
    channel.confirm_delivery()
    channel.basic_publish("", durable, b"kept", PERSISTENT)
    conn.close()
    three.stop_node(0)
    try:
        client = _connect(three.url(1))
        try:
            _attempt(client, seen, lambda c: c.queue_declare(durable, passive=True).method.queue)
            _attempt(client, seen, lambda c: c.queue_declare(transient, passive=True).method.queue)
            _attempt(client, seen, lambda c: c.queue_declare(durable, durable=True).method.queue)
            _attempt(client, seen, lambda c: c.basic_get(durable) and "got")
            _attempt(client, seen, lambda c: c.basic_consume(durable, lambda *_: None))
            _attempt(client, seen, lambda c: c.queue_purge(durable).method.message_count)
            _attempt(client, seen, lambda c: c.queue_delete(durable).method.message_count)
            _attempt(client, seen, lambda c: c.queue_bind(durable, "amq.direct", "k") and "bound")

            def publish(mandatory: bool) -> Callable[[Any], str]:
                def run(channel: Any) -> str:
                    channel.confirm_delivery()
                    channel.basic_publish("", durable, b"lost", PERSISTENT, mandatory=mandatory)
                    return "confirmed"

                return run

            _attempt(client, seen, publish(mandatory=False))
            _attempt(client, seen, publish(mandatory=True))
        finally:
            client.close()
    finally:
        three.start_node(0)
    client = _connect(three.url(1))
    try:

        def reachable() -> bool:
            probe = client.channel()
            try:
                probe.queue_declare(durable, passive=True)
            except pika.exceptions.ChannelClosedByBroker:
                return False
            probe.close()
            return True

        wait_for(reachable, 20, 0.2)
        _attempt(client, seen, lambda c: c.queue_declare(transient, passive=True).method.queue)

        def drain(channel: Any) -> list[bytes]:
            bodies = []
            for _ in range(10):
                method, _properties, body = channel.basic_get(durable, auto_ack=True)
                if method is None:
                    break
                bodies.append(body)
            return bodies

        _attempt(client, seen, drain)
    finally:
        client.close()
    return seen


DOWN = (
    "channel-closed",
    404,
    "NOT_FOUND - home node 'A' of durable queue 'sbs-cluster-durable' in vhost '/' is down or "
    "inaccessible",
)
NO_TRANSIENT = ("channel-closed", 404, "NOT_FOUND - no queue 'sbs-cluster-transient' in vhost '/'")
EXPECTED: dict[Callable[[ThreeNodes], Transcript], Transcript] = {
    routed_across_nodes: [
        ("ok", "confirmed"),
        ("ok", 3),
        ("ok", (b"one", 2)),
        ("ok", [b"two", b"three"]),
    ],
    home_node_down: [
        DOWN,
        NO_TRANSIENT,
        *[DOWN] * 6,
        # RabbitMQ confirms a publish whose only queue is down (the message is dropped), and
        # returns it first when it is mandatory.
        ("ok", "confirmed"),
        ("returned", [312]),
        NO_TRANSIENT,
        ("ok", [b"kept"]),
    ],
}


def _run(three: ThreeNodes, scenario: Callable[[ThreeNodes], Transcript]) -> Transcript:
    return _anonymised(scenario(three), three.node_names())


@pytest.mark.rabbitmq
@pytest.mark.parametrize("scenario", list(EXPECTED), ids=lambda s: s.__name__)
def test_rabbitmq_cluster_answers_as_written(
    scenario: Callable[[ThreeNodes], Transcript], rabbitmq_three: RabbitThree
) -> None:
    assert _run(rabbitmq_three, scenario) == EXPECTED[scenario]


@pytest.mark.parametrize("scenario", list(EXPECTED), ids=lambda s: s.__name__)
def test_leveret_cluster_answers_as_rabbitmq(
    scenario: Callable[[ThreeNodes], Transcript], leveret_three: LeveretThree
) -> None:
    assert _run(leveret_three, scenario) == EXPECTED[scenario]
