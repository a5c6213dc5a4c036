"""`leveret server` as a real process: ports file, clients, SIGTERM, and kombu on top."""

from __future__ import annotations

import contextlib
import json
import socket

import kombu
import pika
import pika.exceptions
import pytest

from tests.support.node import NodeProcess, wait_for


@pytest.fixture
def process():
    node = NodeProcess().start()
    yield node
    node.cleanup()


def test_ports_file_and_clean_shutdown(process: NodeProcess) -> None:
    with open(process.ports_file) as handle:
        ports = json.loads(handle.read())
    assert set(ports) == {"amqp", "mgmt", "cluster", "data"}
    for port in ports.values():
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    conn = pika.BlockingConnection(pika.URLParameters(process.url))
    closed: list[tuple[int, str]] = []
    assert process.terminate() == 0
    with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as info:
        conn.process_data_events(time_limit=2)
        conn.channel()
    closed.append((info.value.reply_code, info.value.reply_text))
    assert closed == [
        (320, "CONNECTION_FORCED - broker forced connection closure with reason 'shutdown'")
    ]


def test_kombu_producer_and_consumer(process: NodeProcess) -> None:
    with kombu.Connection(process.url) as conn:
        exchange = kombu.Exchange("kombu-ex", type="topic", durable=False)
        queue = kombu.Queue("kombu-q", exchange, routing_key="jobs.#", durable=False)
        producer = conn.Producer(serializer="json")
        for i in range(10):
            producer.publish({"n": i}, exchange=exchange, routing_key="jobs.new", declare=[queue])
        received: list[int] = []

        def on_message(body, message) -> None:
            received.append(body["n"])
            message.ack()

        def drain() -> bool:
            with contextlib.suppress(TimeoutError):
                conn.drain_events(timeout=0.2)
            return len(received) == 10

        with conn.Consumer(queue, callbacks=[on_message]):
            wait_for(drain, timeout=10)
        assert received == list(range(10))
