"""consumer_timeout: a delivery left unacknowledged too long closes its channel with RabbitMQ's
406, and the message goes back to its queue marked redelivered."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pika
import pika.exceptions
import pytest

from leveret.config import Config
from leveret.consumer_timeout import DeliveryMarks
from tests.limits.conftest import Broker
from tests.support.node import InProcessNode
from tests.support.rabbitmq import require_rabbitmq, start_rabbitmq


@pytest.fixture
def quick_timeout_node() -> Iterator[InProcessNode]:
    node = InProcessNode(consumer_timeout=1000)
    try:
        yield node
    finally:
        node.stop()


def _held_too_long(url: str, queue: str, wait: float) -> tuple[tuple[int, str] | None, float, bool]:
    """Consume one message without acknowledging it: (the channel's close, seconds until it,
    whether the message came back redelivered)."""
    with pika.BlockingConnection(pika.URLParameters(url)) as connection:
        channel = connection.channel()
        channel.queue_declare(queue)
        channel.basic_publish("", queue, b"held")
        closed: list[tuple[int, str]] = []
        channel._impl.add_on_close_callback(
            lambda _, reason: closed.append((reason.reply_code, reason.reply_text))
        )
        channel.basic_consume(queue, lambda *_: None)
        started = time.monotonic()
        while not closed and time.monotonic() - started < wait:
            connection.process_data_events(0.05)
        elapsed = time.monotonic() - started
        other = connection.channel()
        method, _, _body = other.basic_get(queue, auto_ack=True)
        other.queue_delete(queue)
        return (closed[0] if closed else None), elapsed, bool(method and method.redelivered)


TEXT = (
    "PRECONDITION_FAILED - delivery acknowledgement on channel 1 timed out. Timeout value used: "
    "{} ms. This timeout value can be configured, see consumers doc guide to learn more"
)


def test_unacknowledged_delivery_closes_its_channel(quick_timeout_node: InProcessNode) -> None:
    closed, elapsed, redelivered = _held_too_long(quick_timeout_node.url, "ct-held", 10)
    assert closed == (406, TEXT.format(1000))
    # Never before the timeout; at most about two sweeps (a quarter of it each) after.
    assert 1.0 <= elapsed < 3.0
    assert redelivered


def test_acknowledging_in_time_keeps_the_channel(quick_timeout_node: InProcessNode) -> None:
    with pika.BlockingConnection(pika.URLParameters(quick_timeout_node.url)) as connection:
        channel = connection.channel()
        channel.queue_declare("ct-acked")
        channel.basic_qos(prefetch_count=1)
        acked = []

        def ack_after_a_while(ch, method, _properties, _body):  # type: ignore[no-untyped-def]
            connection.call_later(0.6, lambda: ch.basic_ack(method.delivery_tag))
            acked.append(method.delivery_tag)

        for number in range(5):
            channel.basic_publish("", "ct-acked", str(number).encode())
        channel.basic_consume("ct-acked", ack_after_a_while)
        deadline = time.monotonic() + 10
        while len(acked) < 5 and time.monotonic() < deadline:
            connection.process_data_events(0.05)
        connection.process_data_events(1.0)
        # Five deliveries over 3 s, each acknowledged within 0.6 s: the channel stays open.
        assert len(acked) == 5 and channel.is_open
        channel.queue_delete("ct-acked")


def test_marks_bound_the_age_from_below() -> None:
    marks = DeliveryMarks()
    assert marks.oldest_age(1, None, 0.0) == 0.0
    # Delivery 1 happens after the mark at t=0; it is surely older than 1 s only from the
    # next mark's time (t=1) on.
    assert marks.oldest_age(2, 1, 1.0) == 0.0
    assert marks.oldest_age(2, 1, 2.5) == 1.5
    # Delivery 1 acknowledged, 2 to 4 delivered before t=3: their age counts from t=3.
    assert marks.oldest_age(5, 2, 3.0) == 0.0
    assert marks.oldest_age(5, 2, 3.5) == 0.5


@pytest.mark.slow
@pytest.mark.rabbitmq
def test_same_close_as_rabbitmq() -> None:
    """RabbitMQ checks on its channel tick (60 s): a slow test."""
    require_rabbitmq()
    with start_rabbitmq(extra_config=["consumer_timeout = 1000"]) as node:
        broker = Broker("rabbitmq", node.amqp_port, 0)
        closed, _, redelivered = _held_too_long(broker.url(), "ct-held", 90)
    assert closed == (406, TEXT.format(1000)) and redelivered


def test_default_is_rabbitmqs() -> None:
    assert Config().consumer_timeout == 1_800_000
    assert Config.load(None, {"consumer_timeout": "2500"}).consumer_timeout == 2500
