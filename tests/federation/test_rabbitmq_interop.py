"""Federation with real RabbitMQ: a Leveret queue federated from RabbitMQ, and the reverse."""

from __future__ import annotations

import base64
import json
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pika
import pytest

from tests.federation.test_queue_federation import http, links, publish, ready_count
from tests.support.node import NodeProcess, wait_for
from tests.support.rabbitmq import RabbitNode, require_rabbitmq, start_rabbitmq

FEDERATION_PLUGINS = ("rabbitmq_federation", "rabbitmq_federation_management")


@pytest.fixture(scope="module")
def rabbit() -> Iterator[RabbitNode]:
    require_rabbitmq()
    with start_rabbitmq(management=True, plugins=FEDERATION_PLUGINS) as node:
        yield node


@pytest.fixture(scope="module")
def leveret() -> Iterator[NodeProcess]:
    node = NodeProcess(extra_args=["--node-name", "leveret@localhost"]).start()
    try:
        yield node
    finally:
        node.cleanup()


def rabbit_http(node: RabbitNode, method: str, path: str, body: Any = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        f"http://127.0.0.1:{node.mgmt_port}{path}", data=data, method=method
    )
    request.add_header("Authorization", "Basic " + base64.b64encode(b"guest:guest").decode())
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=10) as response:
        text = response.read()
        return json.loads(text) if text else None


def consume(url: str, queue: str, count: int, prefetch: int = 10) -> list[tuple[bytes, Any]]:
    """Up to `count` messages from `queue`, acknowledged, with their headers (bounded: 20 s)."""
    received: list[tuple[bytes, Any]] = []
    with pika.BlockingConnection(pika.URLParameters(url)) as conn:
        channel = conn.channel()
        channel.basic_qos(prefetch_count=prefetch)

        def take(ch: Any, method: Any, properties: Any, body: bytes) -> None:
            received.append((body, properties.headers))
            ch.basic_ack(method.delivery_tag)

        channel.basic_consume(queue, take)
        deadline = time.monotonic() + 20
        while len(received) < count and time.monotonic() < deadline:
            conn.process_data_events(time_limit=0.1)
    return received


def test_leveret_queue_federated_from_rabbitmq(rabbit: RabbitNode, leveret: NodeProcess) -> None:
    queue = "fed.orders"
    with pika.BlockingConnection(pika.URLParameters(rabbit.url)) as conn:
        channel = conn.channel()
        channel.queue_declare(queue, durable=True)
        channel.confirm_delivery()
        for number in range(10):
            channel.basic_publish("", queue, f"o{number}".encode())
    http(
        leveret,
        "PUT",
        "/api/parameters/federation-upstream/%2F/rabbit",
        {"value": {"uri": rabbit.url, "reconnect-delay": 1}},
    )
    http(
        leveret,
        "PUT",
        "/api/policies/%2F/from-rabbit",
        {"pattern": r"^fed\.orders$", "definition": {"federation-upstream": "rabbit"}},
    )
    try:
        with pika.BlockingConnection(pika.URLParameters(leveret.url)) as conn:
            conn.channel().queue_declare(queue, durable=True)
        wait_for(lambda: [link["status"] for link in links(leveret)] == ["running"], 15, 0.1)
        time.sleep(1)
        assert ready_count(leveret, queue) == 0  # no consumer yet: nothing moved
        received = consume(leveret.url, queue, 10)
        assert sorted(body for body, _ in received) == sorted(
            f"o{number}".encode() for number in range(10)
        )
        assert received[0][1]["x-received-from"][0]["queue"] == queue
        with pika.BlockingConnection(pika.URLParameters(rabbit.url)) as conn:
            left = conn.channel().queue_declare(queue, passive=True).method.message_count
        assert left == 0
    finally:
        http(leveret, "DELETE", "/api/policies/%2F/from-rabbit")
        http(leveret, "DELETE", "/api/parameters/federation-upstream/%2F/rabbit")


def test_rabbitmq_queue_federated_from_leveret(rabbit: RabbitNode, leveret: NodeProcess) -> None:
    queue = "fed.invoices"
    with pika.BlockingConnection(pika.URLParameters(leveret.url)) as conn:
        conn.channel().queue_declare(queue, durable=True)
    publish(leveret, queue, [f"i{number}".encode() for number in range(10)])
    rabbit_http(
        rabbit,
        "PUT",
        "/api/parameters/federation-upstream/%2F/leveret",
        # As RabbitMQ reads AMQP URIs, a bare "/" path is the vhost "": name "/" as %2F.
        {"value": {"uri": leveret.url + "%2F", "reconnect-delay": 1}},
    )
    rabbit_http(
        rabbit,
        "PUT",
        "/api/policies/%2F/from-leveret",
        {"pattern": r"^fed\.invoices$", "definition": {"federation-upstream": "leveret"}},
    )
    with pika.BlockingConnection(pika.URLParameters(rabbit.url)) as conn:
        conn.channel().queue_declare(queue, durable=True)

    def rabbit_link_status() -> list[str]:
        return [link["status"] for link in rabbit_http(rabbit, "GET", "/api/federation-links")]

    wait_for(lambda: rabbit_link_status() == ["running"], 20, 0.2)
    received = consume(rabbit.url, queue, 10)
    assert sorted(body for body, _ in received) == sorted(
        f"i{number}".encode() for number in range(10)
    )
    hop = received[0][1]["x-received-from"][0]
    assert hop["queue"] == queue and hop["redelivered"] is False
    # Leveret's own hops carry the same headers as RabbitMQ's (compared in the other test).
    assert set(received[0][1]) == {
        "x-original-exchange",
        "x-original-routing-key",
        "x-received-from",
    }
    assert set(hop) == {"uri", "queue", "redelivered", "visit-count"}
    assert ready_count(leveret, queue) == 0
