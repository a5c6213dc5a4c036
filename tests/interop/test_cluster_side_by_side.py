"""The same cross-node scenarios on a 3-node RabbitMQ cluster and a 3-node Leveret cluster.

A queue lives on node A; clients use it through B and C. RabbitMQ's transcripts are also pinned
here as written, so a change on either side shows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pika
import pika.exceptions
import pytest

from tests.interop import cluster_feature_scenarios
from tests.interop.test_side_by_side import Transcript
from tests.interop.three_nodes import (
    PERSISTENT,
    LeveretThree,
    RabbitThree,
    ThreeNodes,
    anonymised,
    attempt,
    connect,
    declare_on_a,
)
from tests.support.node import wait_for


def routed_across_nodes(three: ThreeNodes) -> Transcript:
    """Declared through A, published with confirms through B, read through C."""
    seen: Transcript = []
    queue = "sbs-cluster-routed"
    declare_on_a(three, queue, durable=True)
    publisher = connect(three.url(1))
    try:

        def publish(channel: Any) -> str:
            channel.confirm_delivery()
            for body in (b"one", b"two", b"three"):
                channel.basic_publish("", queue, body, PERSISTENT)
            return "confirmed"

        attempt(publisher, seen, publish)
    finally:
        publisher.close()
    consumer = connect(three.url(2))
    try:
        attempt(consumer, seen, lambda c: c.queue_declare(queue, passive=True).method.message_count)

        def get_one(channel: Any) -> Any:
            method, _properties, body = channel.basic_get(queue, auto_ack=True)
            return body, method.message_count

        attempt(consumer, seen, get_one)

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

        attempt(consumer, seen, consume_rest)
    finally:
        consumer.close()
    return seen


def home_node_down(three: ThreeNodes) -> Transcript:
    """A's queues while A is down, seen through B; then A comes back with its durable queue."""
    seen: Transcript = []
    durable, transient = "sbs-cluster-durable", "sbs-cluster-transient"
    declare_on_a(three, durable, durable=True)
    declare_on_a(three, transient)
    conn = connect(three.url(0))
    channel = conn.channel()
    channel.confirm_delivery()
    channel.basic_publish("", durable, b"kept", PERSISTENT)
    conn.close()
    three.stop_node(0)
    try:
        client = connect(three.url(1))
        try:
            attempt(client, seen, lambda c: c.queue_declare(durable, passive=True).method.queue)
            attempt(client, seen, lambda c: c.queue_declare(transient, passive=True).method.queue)
            attempt(client, seen, lambda c: c.queue_declare(durable, durable=True).method.queue)
            attempt(client, seen, lambda c: c.basic_get(durable) and "got")
            attempt(client, seen, lambda c: c.basic_consume(durable, lambda *_: None))
            attempt(client, seen, lambda c: c.queue_purge(durable).method.message_count)
            attempt(client, seen, lambda c: c.queue_delete(durable).method.message_count)
            attempt(client, seen, lambda c: c.queue_bind(durable, "amq.direct", "k") and "bound")

            def publish(mandatory: bool) -> Callable[[Any], str]:
                def run(channel: Any) -> str:
                    channel.confirm_delivery()
                    channel.basic_publish("", durable, b"lost", PERSISTENT, mandatory=mandatory)
                    return "confirmed"

                return run

            attempt(client, seen, publish(mandatory=False))
            attempt(client, seen, publish(mandatory=True))
        finally:
            client.close()
    finally:
        three.start_node(0)
    client = connect(three.url(1))
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
        attempt(client, seen, lambda c: c.queue_declare(transient, passive=True).method.queue)

        def drain(channel: Any) -> list[bytes]:
            bodies = []
            for _ in range(10):
                method, _properties, body = channel.basic_get(durable, auto_ack=True)
                if method is None:
                    break
                bodies.append(body)
            return bodies

        attempt(client, seen, drain)
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


# With the queue features of cluster_feature_scenarios.py.
SCENARIOS = {**EXPECTED, **cluster_feature_scenarios.EXPECTED}


def _run(three: ThreeNodes, scenario: Callable[[ThreeNodes], Transcript]) -> Transcript:
    return anonymised(scenario(three), three.node_names())


@pytest.mark.rabbitmq
@pytest.mark.parametrize("scenario", list(SCENARIOS), ids=lambda s: s.__name__)
def test_rabbitmq_cluster_answers_as_written(
    scenario: Callable[[ThreeNodes], Transcript], rabbitmq_three: RabbitThree
) -> None:
    assert _run(rabbitmq_three, scenario) == SCENARIOS[scenario]


@pytest.mark.parametrize("scenario", list(SCENARIOS), ids=lambda s: s.__name__)
def test_leveret_cluster_answers_as_rabbitmq(
    scenario: Callable[[ThreeNodes], Transcript], leveret_three: LeveretThree
) -> None:
    assert _run(leveret_three, scenario) == SCENARIOS[scenario]
