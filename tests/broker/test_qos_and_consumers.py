"""How messages reach consumers: prefetch, dispatch, cancel, recover, redelivery, nowait methods.

Prefetch per consumer and per channel, no-ack, round-robin, consumer priorities, single active
consumer, server-initiated cancel, recover, redelivered flags, get-ok counts. The tests run
against a Leveret node. With LEVERET_REFERENCE=rabbitmq they also run against a real RabbitMQ,
the reference for every expectation here.

How a test knows a broker delivered *no more* than a limit without sleeping: it waits until the
expected deliveries arrived, then asks for the queue's ready count (a passive declare). A broker
dispatches before it answers that declare, so a count above the limit would show as a lower
ready count.
"""

from __future__ import annotations

import asyncio
import struct
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import aio_pika
import pika
import pika.exceptions
import pytest
from pika.adapters.blocking_connection import BlockingChannel

from leveret.amqp import methods as m
from leveret.amqp.frames import method_frame
from tests.support.node import wait_for
from tests.support.raw_client import RawClient
from tests.support.reference import Target

# --- the broker under test ------------------------------------------------------------------------


@pytest.fixture
def conn(target: Target) -> Iterator[pika.BlockingConnection]:
    connection = pika.BlockingConnection(pika.URLParameters(target.url))
    try:
        yield connection
    finally:
        if connection.is_open:
            connection.close()


@pytest.fixture
def queue_name() -> str:
    return f"qos-{uuid.uuid4().hex[:10]}"


# --- helpers --------------------------------------------------------------------------------------


@dataclass
class Delivery:
    consumer: str
    delivery_tag: int
    body: bytes
    redelivered: bool


@dataclass
class Collector:
    """Deliveries pushed to pika consumers, in arrival order, without acknowledging them."""

    channel: BlockingChannel
    deliveries: list[Delivery] = field(default_factory=list)

    def consume(
        self,
        queue: str,
        tag: str,
        *,
        auto_ack: bool = False,
        arguments: dict[str, Any] | None = None,
    ) -> str:
        def on_message(_ch: Any, method: Any, _props: Any, body: bytes) -> None:
            self.deliveries.append(
                Delivery(method.consumer_tag, method.delivery_tag, body, method.redelivered)
            )

        return self.channel.basic_consume(
            queue, on_message, auto_ack=auto_ack, consumer_tag=tag, arguments=arguments
        )

    def of(self, tag: str) -> list[Delivery]:
        return [d for d in self.deliveries if d.consumer == tag]

    def wait_count(self, count: int, timeout: float = 10.0) -> None:
        def arrived() -> bool:
            self.channel.connection.process_data_events(time_limit=0.02)
            return len(self.deliveries) >= count

        wait_for(arrived, timeout)

    def ack(self, delivery: Delivery, multiple: bool = False) -> None:
        self.channel.basic_ack(delivery.delivery_tag, multiple=multiple)


def publish(conn: pika.BlockingConnection, queue: str, count: int, start: int = 0) -> None:
    channel = conn.channel()
    channel.confirm_delivery()  # every publish is routed before this returns
    for i in range(start, start + count):
        channel.basic_publish("", queue, str(i).encode())
    channel.close()


def ready(conn: pika.BlockingConnection, queue: str) -> int:
    channel = conn.channel()
    count = channel.queue_declare(queue, passive=True).method.message_count
    channel.close()
    return count


def bodies(deliveries: list[Delivery]) -> list[int]:
    return [int(d.body) for d in deliveries]


# --- prefetch -------------------------------------------------------------------------------------


def test_per_consumer_prefetch(conn: pika.BlockingConnection, queue_name: str) -> None:
    """global=false: each consumer has its own limit (spec README item 11)."""
    conn.channel().queue_declare(queue_name)
    publish(conn, queue_name, 10)
    ch = conn.channel()
    ch.basic_qos(prefetch_count=2, global_qos=False)
    got = Collector(ch)
    got.consume(queue_name, "a")
    got.consume(queue_name, "b")
    got.wait_count(4)
    assert ready(conn, queue_name) == 6
    assert len(got.of("a")) == 2 and len(got.of("b")) == 2
    got.ack(got.of("a")[0])
    got.wait_count(5)
    assert len(got.of("a")) == 3
    assert ready(conn, queue_name) == 5


def test_global_prefetch_is_shared_by_the_channel(
    conn: pika.BlockingConnection, queue_name: str
) -> None:
    conn.channel().queue_declare(queue_name)
    publish(conn, queue_name, 10)
    ch = conn.channel()
    ch.basic_qos(prefetch_count=3, global_qos=True)
    got = Collector(ch)
    got.consume(queue_name, "a")
    got.consume(queue_name, "b")
    got.wait_count(3)
    assert ready(conn, queue_name) == 7
    got.ack(got.deliveries[-1], multiple=True)
    got.wait_count(6)
    assert ready(conn, queue_name) == 4


def test_global_prefetch_spans_queues(conn: pika.BlockingConnection, queue_name: str) -> None:
    first, second = queue_name + "-1", queue_name + "-2"
    for queue in (first, second):
        conn.channel().queue_declare(queue)
        publish(conn, queue, 5)
    ch = conn.channel()
    ch.basic_qos(prefetch_count=4, global_qos=True)
    got = Collector(ch)
    got.consume(first, "a")
    got.consume(second, "b")
    got.wait_count(4)
    assert ready(conn, first) + ready(conn, second) == 6


def test_per_consumer_and_global_prefetch_together(
    conn: pika.BlockingConnection, queue_name: str
) -> None:
    conn.channel().queue_declare(queue_name)
    publish(conn, queue_name, 20)
    ch = conn.channel()
    ch.basic_qos(prefetch_count=2, global_qos=False)
    ch.basic_qos(prefetch_count=3, global_qos=True)
    got = Collector(ch)
    for tag in ("a", "b", "c"):
        got.consume(queue_name, tag)
    got.wait_count(3)
    assert ready(conn, queue_name) == 17
    assert all(len(got.of(tag)) <= 2 for tag in ("a", "b", "c"))
    # Raising the shared limit lets each consumer reach its own limit of 2, no more.
    ch.basic_qos(prefetch_count=10, global_qos=True)
    got.wait_count(6)
    assert ready(conn, queue_name) == 14
    assert [len(got.of(tag)) for tag in ("a", "b", "c")] == [2, 2, 2]


def test_per_consumer_prefetch_applies_to_consumers_created_after(
    conn: pika.BlockingConnection, queue_name: str
) -> None:
    conn.channel().queue_declare(queue_name)
    publish(conn, queue_name, 10)
    ch = conn.channel()
    ch.basic_qos(prefetch_count=1)
    got = Collector(ch)
    got.consume(queue_name, "a")
    ch.basic_qos(prefetch_count=3)
    got.consume(queue_name, "b")
    got.wait_count(4)
    assert ready(conn, queue_name) == 6
    assert (len(got.of("a")), len(got.of("b"))) == (1, 3)


def test_prefetch_zero_means_unlimited(conn: pika.BlockingConnection, queue_name: str) -> None:
    conn.channel().queue_declare(queue_name)
    publish(conn, queue_name, 50)
    ch = conn.channel()
    ch.basic_qos(prefetch_count=5)
    ch.basic_qos(prefetch_count=0)
    ch.basic_qos(prefetch_count=0, global_qos=True)
    got = Collector(ch)
    got.consume(queue_name, "a")
    got.wait_count(50)
    assert bodies(got.deliveries) == list(range(50))


@pytest.mark.parametrize("global_qos", [False, True], ids=["per-consumer", "global"])
def test_no_ack_consumers_ignore_prefetch(
    conn: pika.BlockingConnection, queue_name: str, global_qos: bool
) -> None:
    conn.channel().queue_declare(queue_name)
    publish(conn, queue_name, 30)
    ch = conn.channel()
    ch.basic_qos(prefetch_count=1, global_qos=global_qos)
    got = Collector(ch)
    got.consume(queue_name, "a", auto_ack=True)
    got.wait_count(30)
    assert ready(conn, queue_name) == 0


def test_global_limit_reached_by_acking_consumers_blocks_no_ack_ones_too(
    conn: pika.BlockingConnection, queue_name: str
) -> None:
    acked, free = queue_name + "-acked", queue_name + "-free"
    for queue in (acked, free):
        conn.channel().queue_declare(queue)
        publish(conn, queue, 3)
    ch = conn.channel()
    ch.basic_qos(prefetch_count=1, global_qos=True)
    got = Collector(ch)
    got.consume(acked, "acked")
    got.wait_count(1)
    got.consume(free, "free", auto_ack=True)
    # RabbitMQ's limiter asks even for no-ack deliveries whether the channel's limit is reached.
    assert ready(conn, free) == 3
    assert ready(conn, acked) == 2


def test_prefetch_counts_consumer_deliveries_not_gets(
    conn: pika.BlockingConnection, queue_name: str
) -> None:
    conn.channel().queue_declare(queue_name)
    publish(conn, queue_name, 10)
    ch = conn.channel()
    ch.basic_qos(prefetch_count=2, global_qos=True)
    for _ in range(3):
        assert ch.basic_get(queue_name)[0] is not None  # unacknowledged
    got = Collector(ch)
    got.consume(queue_name, "a")
    got.wait_count(2)
    assert ready(conn, queue_name) == 5


def test_qos_prefetch_size_not_implemented(conn: pika.BlockingConnection) -> None:
    ch = conn.channel()
    with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as caught:
        ch.basic_qos(prefetch_size=1000, prefetch_count=1)
    assert (caught.value.reply_code, caught.value.reply_text) == (
        540,
        "NOT_IMPLEMENTED - prefetch_size!=0 (1000)",
    )


# --- dispatch among consumers ---------------------------------------------------------------------


def test_round_robin_is_fair(conn: pika.BlockingConnection, queue_name: str) -> None:
    conn.channel().queue_declare(queue_name)
    ch = conn.channel()
    got = Collector(ch)
    tags = ["a", "b", "c"]
    for tag in tags:
        got.consume(queue_name, tag, auto_ack=True)
    publish(conn, queue_name, 300)
    got.wait_count(300)
    assert [len(got.of(tag)) for tag in tags] == [100, 100, 100]
    # Each consumer sees its share in queue order, and the shares interleave.
    for index, tag in enumerate(tags):
        assert bodies(got.of(tag)) == list(range(index, 300, 3))


def test_round_robin_skips_consumers_at_their_limit(
    conn: pika.BlockingConnection, queue_name: str
) -> None:
    conn.channel().queue_declare(queue_name)
    publish(conn, queue_name, 10)
    ch = conn.channel()
    ch.basic_qos(prefetch_count=1)
    got = Collector(ch)
    got.consume(queue_name, "slow")
    ch.basic_qos(prefetch_count=0)
    got.consume(queue_name, "fast")
    got.wait_count(10)
    assert len(got.of("slow")) == 1
    assert len(got.of("fast")) == 9


def test_consumer_priorities_with_prefetch(conn: pika.BlockingConnection, queue_name: str) -> None:
    conn.channel().queue_declare(queue_name)
    ch = conn.channel()
    ch.basic_qos(prefetch_count=2)
    got = Collector(ch)
    got.consume(queue_name, "low", arguments={"x-priority": 1})
    got.consume(queue_name, "high", arguments={"x-priority": 10})
    got.consume(queue_name, "default")
    publish(conn, queue_name, 7)
    got.wait_count(6)
    assert ready(conn, queue_name) == 1
    # The higher priority consumer fills up first, then the next one down.
    assert bodies(got.of("high")) == [0, 1]
    assert bodies(got.of("low")) == [2, 3]
    assert bodies(got.of("default")) == [4, 5]
    got.ack(got.of("high")[0])
    got.wait_count(7)
    assert bodies(got.of("high")) == [0, 1, 6]
    got.ack(got.of("default")[0])
    publish(conn, queue_name, 1, start=7)
    got.wait_count(8)
    assert bodies(got.of("default")) == [4, 5, 7]


def test_consumer_priority_must_be_an_integer(
    request: pytest.FixtureRequest, target: Target, conn: pika.BlockingConnection, queue_name: str
) -> None:
    conn.channel().queue_declare(queue_name)
    ch = conn.channel()
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as caught:
        ch.basic_consume(queue_name, lambda *args: None, arguments={"x-priority": "high"})
    assert (caught.value.reply_code, caught.value.reply_text) == (
        406,
        (
            f"PRECONDITION_FAILED - invalid arg 'x-priority' for queue '{queue_name}' in vhost "
            "'/': "
            '"expected integer, got longstr"'
        ),
    )


def test_single_active_consumer_fails_over_when_its_channel_closes(
    conn: pika.BlockingConnection, target: Target, queue_name: str
) -> None:
    conn.channel().queue_declare(queue_name, arguments={"x-single-active-consumer": True})
    first_ch = conn.channel()
    first_ch.basic_qos(prefetch_count=3)
    first = Collector(first_ch)
    first.consume(queue_name, "first")
    other = pika.BlockingConnection(pika.URLParameters(target.url))
    try:
        second = Collector(other.channel())
        second.consume(queue_name, "second")
        publish(conn, queue_name, 5)
        first.wait_count(3)
        assert bodies(first.deliveries) == [0, 1, 2]
        assert ready(conn, queue_name) == 2, (
            "the waiting consumer must get nothing while the first is active"
        )
        first.ack(first.deliveries[0])
        first.wait_count(4)
        first_ch.close()
        second.wait_count(4)
        # The unacknowledged ones come back first, in their original order, marked redelivered.
        assert [(int(d.body), d.redelivered) for d in second.deliveries] == [
            (1, True),
            (2, True),
            (3, True),
            (4, False),
        ]
    finally:
        other.close()


def test_single_active_consumer_cancelled_with_unacked_messages(
    conn: pika.BlockingConnection, queue_name: str
) -> None:
    conn.channel().queue_declare(queue_name, arguments={"x-single-active-consumer": True})
    first_ch = conn.channel()
    first_ch.basic_qos(prefetch_count=2)
    first = Collector(first_ch)
    first.consume(queue_name, "first")
    second = Collector(conn.channel())
    second.consume(queue_name, "second")
    publish(conn, queue_name, 5)
    first.wait_count(2)
    first_ch.basic_cancel("first")
    assert ready(conn, queue_name) == 3
    first.ack(first.deliveries[0])
    first_ch.basic_reject(first.deliveries[1].delivery_tag, requeue=True)
    second.wait_count(4)
    assert [(int(d.body), d.redelivered) for d in second.deliveries] == [
        (1, True),
        (2, False),
        (3, False),
        (4, False),
    ]


def test_single_active_consumer_ignores_later_consumers_on_the_same_channel(
    conn: pika.BlockingConnection, queue_name: str
) -> None:
    conn.channel().queue_declare(queue_name, arguments={"x-single-active-consumer": True})
    ch = conn.channel()
    got = Collector(ch)
    got.consume(queue_name, "one", auto_ack=True)
    got.consume(queue_name, "two", auto_ack=True)
    publish(conn, queue_name, 6)
    got.wait_count(6)
    assert len(got.of("one")) == 6
    ch.basic_cancel("one")
    publish(conn, queue_name, 2, start=6)
    got.wait_count(8)
    assert bodies(got.of("two")) == [6, 7]


def test_exclusive_consumer(conn: pika.BlockingConnection, queue_name: str) -> None:
    conn.channel().queue_declare(queue_name)
    ch = conn.channel()
    ch.basic_consume(queue_name, lambda *args: None, exclusive=True)
    for exclusive in (False, True):
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as caught:
            conn.channel().basic_consume(queue_name, lambda *args: None, exclusive=exclusive)
        assert (caught.value.reply_code, caught.value.reply_text) == (
            403,
            f"ACCESS_REFUSED - queue '{queue_name}' in vhost '/' in exclusive use",
        )


# --- cancel ---------------------------------------------------------------------------------------


def test_node_cancels_consumers_of_a_deleted_queue(
    conn: pika.BlockingConnection, queue_name: str
) -> None:
    """pika advertises consumer_cancel_notify: it hears basic.cancel when the queue goes away."""
    conn.channel().queue_declare(queue_name)
    ch = conn.channel()
    cancelled: list[str] = []
    ch.add_on_cancel_callback(lambda frame: cancelled.append(frame.method.consumer_tag))
    Collector(ch).consume(queue_name, "watcher")
    conn.channel().queue_delete(queue_name)

    def heard() -> bool:
        conn.process_data_events(time_limit=0.02)
        return bool(cancelled)

    wait_for(heard)
    assert cancelled == ["watcher"]
    assert ch.is_open
    ch.basic_qos(prefetch_count=1)  # the channel is still usable


def _raw_consumer(port: int, queue: str, capabilities: dict[str, Any]) -> RawClient:
    raw = RawClient(port)
    raw.send(b"AMQP\x00\x00\x09\x01")
    assert isinstance(raw.read_method()[1], m.ConnectionStart)  # type: ignore[index]
    raw.send(
        method_frame(
            0,
            m.ConnectionStartOk(
                {"capabilities": capabilities}, "PLAIN", b"\x00guest\x00guest", "en_US"
            ),
        )
    )
    tune = raw.read_method()[1]  # type: ignore[index]
    assert isinstance(tune, m.ConnectionTune)
    raw.send(method_frame(0, m.ConnectionTuneOk(tune.channel_max, tune.frame_max, 0)))
    raw.send(method_frame(0, m.ConnectionOpen("/")))
    assert isinstance(raw.read_method()[1], m.ConnectionOpenOk)  # type: ignore[index]
    raw.send(method_frame(1, m.ChannelOpen()))
    assert isinstance(raw.read_method()[1], m.ChannelOpenOk)  # type: ignore[index]
    raw.send(method_frame(1, m.BasicConsume(queue=queue, consumer_tag="raw")))
    assert isinstance(raw.read_method()[1], m.BasicConsumeOk)  # type: ignore[index]
    return raw


def _methods_until(raw: RawClient, kind: type[m.Method]) -> list[m.Method]:
    """Every method received up to and including the first of `kind` (bounded in count)."""
    seen: list[m.Method] = []
    for _ in range(100):
        result = raw.read_method()
        assert result is not None, f"socket closed before {kind.__name__}"
        seen.append(result[1])
        if isinstance(result[1], kind):
            return seen
    raise AssertionError(f"no {kind.__name__} among {seen}")


@pytest.mark.parametrize("notify", [True, False], ids=["with-capability", "without-capability"])
def test_server_cancel_only_with_consumer_cancel_notify(
    conn: pika.BlockingConnection, target: Target, queue_name: str, notify: bool
) -> None:
    conn.channel().queue_declare(queue_name)
    raw = _raw_consumer(target.port, queue_name, {"consumer_cancel_notify": True} if notify else {})
    try:
        conn.channel().queue_delete(queue_name)
        # A round trip on the consumer's channel: anything the node sent before shows up first.
        raw.send(method_frame(1, m.BasicQos(0, 5, False)))
        seen = _methods_until(raw, m.BasicQosOk)
        cancels = [method for method in seen if isinstance(method, m.BasicCancel)]
        assert cancels == ([m.BasicCancel("raw", True)] if notify else [])
        # The consumer is gone either way: its tag can be used again on a new queue.
        raw.send(method_frame(1, m.QueueDeclare(queue=queue_name)))
        raw.send(method_frame(1, m.BasicConsume(queue=queue_name, consumer_tag="raw")))
        assert isinstance(_methods_until(raw, m.BasicConsumeOk)[-1], m.BasicConsumeOk)
    finally:
        raw.close()


def test_acks_in_one_read_count_up_to_an_unknown_tag(
    conn: pika.BlockingConnection, target: Target, queue_name: str
) -> None:
    """A consumer's acks arrive many to a read: those before an unknown tag count, the channel
    closes on it, and the acks after it on that channel count for nothing."""
    conn.channel().queue_declare(queue_name)
    publish(conn, queue_name, 4)
    raw = _raw_consumer(target.port, queue_name, {})
    try:
        tags = []
        for _ in range(4):
            delivered = _methods_until(raw, m.BasicDeliver)[-1]
            tags.append(delivered.delivery_tag)  # type: ignore[attr-defined]
        acks = [method_frame(1, m.BasicAck(tag)) for tag in (tags[0], tags[1], 99, tags[2])]
        raw.send(b"".join(acks))
        close = _methods_until(raw, m.ChannelClose)[-1]
        assert close == m.ChannelClose(406, "PRECONDITION_FAILED - unknown delivery tag 99", 60, 80)
        raw.send(method_frame(1, m.ChannelCloseOk()))
        # The third and fourth deliveries were not acknowledged: the closed channel gave them back.
        wait_for(lambda: ready(conn, queue_name) == 2)
        left = [conn.channel().basic_get(queue_name, auto_ack=True)[2] for _ in range(2)]
        assert left == [b"2", b"3"]
    finally:
        raw.close()


def test_cancel_keeps_unacked_messages_with_the_channel(
    conn: pika.BlockingConnection, queue_name: str
) -> None:
    conn.channel().queue_declare(queue_name)
    publish(conn, queue_name, 3)
    ch = conn.channel()
    ch.basic_qos(prefetch_count=2)
    got = Collector(ch)
    got.consume(queue_name, "a")
    got.wait_count(2)
    ch.basic_cancel("a")
    assert ready(conn, queue_name) == 1  # still unacknowledged, not requeued by the cancel
    got.ack(got.deliveries[1], multiple=True)  # acks after cancel still count
    assert ready(conn, queue_name) == 1
    ch.close()
    assert ready(conn, queue_name) == 1


# --- recover and redelivery -----------------------------------------------------------------------


def test_basic_recover_requeues_unacked_as_redelivered(
    conn: pika.BlockingConnection, queue_name: str
) -> None:
    conn.channel().queue_declare(queue_name)
    publish(conn, queue_name, 4)
    ch = conn.channel()
    first = ch.basic_get(queue_name)
    second = ch.basic_get(queue_name)
    ch.basic_ack(first[0].delivery_tag)
    ch.basic_recover(requeue=True)
    got = [ch.basic_get(queue_name, auto_ack=True) for _ in range(3)]
    assert [(g[2], g[0].redelivered) for g in got] == [(b"1", True), (b"2", False), (b"3", False)]
    assert second[0].redelivered is False
    # The old delivery tag is void after recover.
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as caught:
        ch.basic_ack(second[0].delivery_tag)
        ch.queue_declare(queue_name, passive=True)
    assert caught.value.reply_code == 406
    assert (
        caught.value.reply_text
        == f"PRECONDITION_FAILED - unknown delivery tag {second[0].delivery_tag}"
    )


def test_basic_recover_redelivers_to_consumers(
    conn: pika.BlockingConnection, queue_name: str
) -> None:
    conn.channel().queue_declare(queue_name)
    publish(conn, queue_name, 3)
    ch = conn.channel()
    got = Collector(ch)
    got.consume(queue_name, "a")
    got.wait_count(3)
    got.ack(got.deliveries[0])
    ch.basic_recover(requeue=True)
    got.wait_count(5)
    assert [(int(d.body), d.redelivered) for d in got.deliveries[3:]] == [(1, True), (2, True)]


def test_basic_recover_without_requeue_not_implemented(
    conn: pika.BlockingConnection, queue_name: str
) -> None:
    ch = conn.channel()
    with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as caught:
        ch.basic_recover(requeue=False)
    assert (caught.value.reply_code, caught.value.reply_text) == (
        540,
        "NOT_IMPLEMENTED - requeue=false",
    )


def test_redelivered_flag_after_nack_reject_and_channel_close(
    conn: pika.BlockingConnection, queue_name: str
) -> None:
    conn.channel().queue_declare(queue_name)
    publish(conn, queue_name, 3)
    ch = conn.channel()
    tags = [ch.basic_get(queue_name)[0].delivery_tag for _ in range(3)]
    ch.basic_nack(tags[0], requeue=True)
    ch.basic_reject(tags[1], requeue=False)  # dropped
    ch.close()  # the third goes back unacknowledged
    ch = conn.channel()
    got = [ch.basic_get(queue_name, auto_ack=True) for _ in range(3)]
    assert [(g[2], g[0].redelivered) if g[0] else None for g in got] == [
        (b"0", True),
        (b"2", True),
        None,
    ]


def test_nack_multiple_requeues_in_original_order(
    conn: pika.BlockingConnection, queue_name: str
) -> None:
    conn.channel().queue_declare(queue_name)
    publish(conn, queue_name, 5)
    ch = conn.channel()
    got = Collector(ch)
    ch.basic_qos(prefetch_count=3)
    got.consume(queue_name, "a")
    got.wait_count(3)
    ch.basic_nack(got.deliveries[2].delivery_tag, multiple=True, requeue=True)
    got.wait_count(6)
    assert [(int(d.body), d.redelivered) for d in got.deliveries[3:]] == [
        (0, True),
        (1, True),
        (2, True),
    ]


def test_get_ok_message_count_is_what_remains_ready(
    conn: pika.BlockingConnection, queue_name: str
) -> None:
    conn.channel().queue_declare(queue_name)
    publish(conn, queue_name, 4)
    ch = conn.channel()
    counts = []
    for _ in range(2):
        method, _props, _body = ch.basic_get(queue_name)  # unacked ones do not count
        counts.append(method.message_count)
    ch.basic_nack(method.delivery_tag, requeue=True)
    counts += [ch.basic_get(queue_name, auto_ack=True)[0].message_count for _ in range(3)]
    assert counts == [3, 2, 2, 1, 0]
    assert ch.basic_get(queue_name) == (None, None, None)


def test_aio_pika_prefetch_and_redelivery(target: Target, queue_name: str) -> None:
    async def scenario() -> tuple[list[tuple[bytes, bool]], int]:
        connection = await aio_pika.connect(target.url)
        async with connection:
            channel = await connection.channel()
            await channel.set_qos(prefetch_count=2)
            queue = await channel.declare_queue(queue_name)
            for i in range(4):
                await channel.default_exchange.publish(
                    aio_pika.Message(str(i).encode()), queue_name
                )
            seen: list[tuple[bytes, bool]] = []
            held: list[aio_pika.abc.AbstractIncomingMessage] = []
            async with queue.iterator() as messages:
                async for message in messages:
                    seen.append((message.body, bool(message.redelivered)))
                    if len(seen) <= 2:
                        held.append(message)
                        if len(held) == 2:
                            # Both prefetched messages back to the queue: they come again, flagged.
                            await held[0].nack(requeue=True)
                            await held[1].reject(requeue=True)
                        continue
                    await message.ack()
                    if len(seen) == 6:
                        break
            declared = await channel.declare_queue(queue_name, passive=True)
            return seen, declared.declaration_result.message_count or 0

    seen, remaining = asyncio.run(asyncio.wait_for(scenario(), 20))
    assert seen == [
        (b"0", False),
        (b"1", False),
        (b"0", True),
        (b"1", True),
        (b"2", False),
        (b"3", False),
    ]
    assert remaining == 0


# --- nowait ---------------------------------------------------------------------------------------


def test_nowait_variants_send_no_replies(target: Target, queue_name: str) -> None:
    raw = RawClient(target.port)
    try:
        raw.handshake()
        ex = queue_name + "-ex"
        raw.send(
            method_frame(1, m.ExchangeDeclare(exchange=ex, type="direct", no_wait=True))
            + method_frame(1, m.QueueDeclare(queue=queue_name, no_wait=True))
            + method_frame(
                1, m.QueueBind(queue=queue_name, exchange=ex, routing_key="k", no_wait=True)
            )
            + method_frame(
                1,
                m.ExchangeBind(destination=ex, source="amq.direct", routing_key="k", no_wait=True),
            )
            + method_frame(
                1, m.BasicConsume(queue=queue_name, consumer_tag="nw", no_ack=True, no_wait=True)
            )
            + method_frame(1, m.BasicPublish(exchange="amq.direct", routing_key="k"))
            + struct.pack(">BHI", 2, 1, 14)
            + struct.pack(">HHQH", 60, 0, 2, 0)
            + b"\xce"
            + struct.pack(">BHI", 3, 1, 2)
            + b"hi\xce"
        )
        # The message went through every declared object: the only frames are its delivery.
        assert [type(method) for method in _methods_until(raw, m.BasicDeliver)] == [m.BasicDeliver]
        assert raw.read_frame()[0] == 2  # type: ignore[index]
        assert raw.read_frame()[2] == b"hi"  # type: ignore[index]
        raw.send(
            method_frame(1, m.BasicCancel(consumer_tag="nw", no_wait=True))
            + method_frame(1, m.QueueDelete(queue=queue_name, no_wait=True))
            + method_frame(1, m.ExchangeDelete(exchange=ex, no_wait=True))
            + method_frame(1, m.ExchangeDeclare(exchange=ex, type="direct", passive=True))
        )
        # No cancel-ok or delete-ok: only the passive declare's 404, showing the deletes happened.
        [close] = _methods_until(raw, m.ChannelClose)
        assert isinstance(close, m.ChannelClose)
        assert (close.reply_code, close.reply_text) == (
            404,
            f"NOT_FOUND - no exchange '{ex}' in vhost '/'",
        )  # type: ignore[attr-defined]
    finally:
        raw.close()
