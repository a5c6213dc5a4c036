"""kombu's everyday use against a node: producers, consumers, drain_events and SimpleQueue."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import kombu
import pytest
from amqp.exceptions import NotFound

from tests.support.node import InProcessNode, wait_for


@pytest.fixture
def conn(node: InProcessNode) -> Iterator[kombu.Connection]:
    with kombu.Connection(node.url, transport_options={"confirm_publish": True}) as connection:
        connection.ensure_connection(max_retries=3)
        yield connection


def drain_until(conn: kombu.Connection, done: Callable[[], bool], timeout: float = 10) -> None:
    """Let kombu dispatch deliveries to the consumers' callbacks until done() holds."""

    def step() -> bool:
        with contextlib.suppress(TimeoutError):  # nothing arrived in this slice
            conn.drain_events(timeout=0.1)
        return done()

    wait_for(step, timeout)


def ready_count(conn: kombu.Connection, queue: kombu.Queue) -> int:
    _, messages, _ = queue(conn.default_channel).queue_declare(passive=True)
    return int(messages)


def test_producer_declares_and_a_consumer_drains(conn: kombu.Connection) -> None:
    exchange = kombu.Exchange("orders", type="topic", durable=True)
    queue = kombu.Queue("orders.eu", exchange, routing_key="order.eu.*", durable=True)
    producer = kombu.Producer(conn, exchange=exchange, serializer="json")
    for number in range(5):
        producer.publish(
            {"number": number, "city": "Zürich"},
            routing_key="order.eu.new",
            declare=[queue],
            headers={"attempt": 1},
            correlation_id=f"c-{number}",
            delivery_mode="persistent",
            retry=True,
        )
    producer.publish({"number": 99}, routing_key="order.us.new")  # matches no binding
    assert ready_count(conn, queue) == 5

    received: list[dict[str, Any]] = []
    details: list[tuple[Any, ...]] = []

    def on_message(body: dict[str, Any], message: kombu.Message) -> None:
        received.append(body)
        details.append(
            (
                message.content_type,
                message.headers,
                message.properties["correlation_id"],
                message.delivery_info["routing_key"],
                message.delivery_info["exchange"],
            )
        )
        message.ack()

    with kombu.Consumer(conn, [queue], callbacks=[on_message], accept=["json"], prefetch_count=2):
        drain_until(conn, lambda: len(received) == 5)
    assert received == [{"number": n, "city": "Zürich"} for n in range(5)]
    assert details[0] == ("application/json", {"attempt": 1}, "c-0", "order.eu.new", "orders")
    assert ready_count(conn, queue) == 0


def test_rejected_and_requeued_messages(conn: kombu.Connection) -> None:
    queue = kombu.Queue("retry-me", kombu.Exchange("retry-ex", type="direct"), routing_key="r")
    producer = conn.Producer(serializer="json")
    producer.publish("first", exchange=queue.exchange, routing_key="r", declare=[queue])
    producer.publish("second", exchange=queue.exchange, routing_key="r")
    seen: list[tuple[str, bool]] = []

    def on_message(body: str, message: kombu.Message) -> None:
        seen.append((body, message.delivery_info["redelivered"]))
        if body == "first" and not message.delivery_info["redelivered"]:
            message.requeue()
        elif body == "second":
            message.reject()  # dropped: no dead-letter exchange
        else:
            message.ack()

    with conn.Consumer(queue, callbacks=[on_message], accept=["json"]):
        drain_until(conn, lambda: ("first", True) in seen and ("second", False) in seen)
    assert sorted(seen) == [("first", False), ("first", True), ("second", False)]
    assert ready_count(conn, queue) == 0


def test_priorities_and_fanout(conn: kombu.Connection) -> None:
    urgent = kombu.Queue("by-priority", routing_key="by-priority", max_priority=9)
    producer = conn.Producer(serializer="json")
    for priority in (1, 9, 5):
        producer.publish(priority, routing_key="by-priority", priority=priority, declare=[urgent])
    order: list[int] = []

    def on_priority(body: int, message: kombu.Message) -> None:
        order.append(body)
        message.ack()

    with conn.Consumer(urgent, callbacks=[on_priority], accept=["json"]):
        drain_until(conn, lambda: len(order) == 3)
    assert order == [9, 5, 1]

    news = kombu.Exchange("news", type="fanout", auto_delete=True)
    readers = [kombu.Queue(f"reader-{n}", news, exclusive=True) for n in range(3)]
    producer.publish({"headline": "hello"}, exchange=news, declare=readers)
    heard: list[tuple[str, str]] = []

    def on_news(body: dict[str, str], message: kombu.Message) -> None:
        heard.append((body["headline"], message.delivery_info["consumer_tag"]))
        message.ack()

    with conn.Consumer(readers, callbacks=[on_news], accept=["json"]):
        drain_until(conn, lambda: len(heard) == 3)
        assert all(ready_count(conn, reader) == 0 for reader in readers)
    # kombu consumes each queue under a tag of its own: three tags, one copy through each.
    assert {headline for headline, _ in heard} == {"hello"}
    assert len({tag for _, tag in heard}) == 3
    # Exclusive queues are auto-delete in kombu: gone with their consumers.
    with pytest.raises(NotFound) as gone:
        ready_count(conn, readers[0])
    assert "NOT_FOUND - no queue 'reader-0'" in str(gone.value)


def test_simple_queue(conn: kombu.Connection) -> None:
    with conn.SimpleQueue("simple", serializer="json") as queue:
        for number in range(3):
            queue.put(number)  # each put waits for its confirm: the queue holds them now
        assert queue.qsize() == 3
        first = queue.get_nowait()  # basic.get
        assert first.payload == 0
        first.ack()
        assert queue.clear() == 2
        assert queue.qsize() == 0
        with pytest.raises(queue.Empty):
            queue.get(block=False)
        queue.put({"hello": "world"})
        message = queue.get(block=True, timeout=5)  # basic.consume and drain_events
        assert message.payload == {"hello": "world"}
        assert message.properties["delivery_mode"] == 2  # SimpleQueue's messages are persistent
        message.ack()
        # Nothing else is there: waiting a little longer finds nothing.
        with pytest.raises(queue.Empty):
            queue.get(block=True, timeout=0.2)
