"""Streams against Leveret and a real RabbitMQ 3.10.8: the same declares, consumers and refusals
must give the client the same answers, codes and texts."""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable, Iterator
from typing import Any

import pika
import pika.exceptions
import pytest
from pika.adapters.blocking_connection import BlockingChannel

from tests.streams.support import STREAM, declare_stream, publish, read, settle_quietly
from tests.support.node import InProcessNode
from tests.support.rabbitmq import RabbitNode

Action = Callable[[BlockingChannel], Any]


@pytest.fixture(scope="module")
def leveret() -> Iterator[InProcessNode]:
    node = InProcessNode()
    try:
        yield node
    finally:
        node.stop()


def outcome(url: str, action: Action) -> tuple[Any, ...]:
    """What one action gets on a fresh connection: its result, or how the broker closed."""
    conn = pika.BlockingConnection(pika.URLParameters(url))
    try:
        return ("ok", action(conn.channel()))
    except pika.exceptions.ChannelClosedByBroker as exc:
        return ("channel", exc.reply_code, exc.reply_text)
    except pika.exceptions.ConnectionClosedByBroker as exc:
        return ("connection", exc.reply_code, exc.reply_text)
    finally:
        if conn.is_open:
            conn.close()


def both(rabbit: RabbitNode, node: InProcessNode, actions: dict[str, Action]) -> None:
    """Run every action on both brokers and compare the answers, naming the first difference."""
    for name, action in actions.items():
        expected = outcome(rabbit.url, action)
        got = outcome(node.url, action)
        assert got == expected, f"{name}: Leveret {got!r}, RabbitMQ {expected!r}"


def _declare(name: str, **options: Any) -> Action:
    arguments = {**STREAM, **options.pop("arguments", {})}
    options.setdefault("durable", True)

    def action(ch: BlockingChannel) -> int:
        return int(ch.queue_declare(name, arguments=arguments, **options).method.message_count)

    return action


def _delete_then(name: str, then: Action) -> Action:
    def action(ch: BlockingChannel) -> Any:
        ch.queue_delete(name)
        return then(ch)

    return action


def test_declare_refusals_and_accepted_arguments(
    rabbitmq: RabbitNode, leveret: InProcessNode
) -> None:
    refused_arguments = {
        "x-max-priority": 3,
        "x-message-ttl": 10,
        "x-expires": 1000,
        "x-max-length": 5,
        "x-overflow": "drop-head",
        "x-dead-letter-exchange": "dlx",
        "x-single-active-consumer": True,
        "x-queue-mode": "lazy",
        "x-queue-version": 2,
        "x-delivery-limit": 3,
        "x-max-in-memory-length": 3,
        "x-quorum-initial-group-size": 3,
        "x-dead-letter-strategy": "at-most-once",
    }
    actions: dict[str, Action] = {
        "non-durable": _declare("sbs-p1", durable=False),
        "exclusive": _declare("sbs-p2", exclusive=True),
        "auto-delete": _declare("sbs-p3", auto_delete=True),
        "all three": _declare("sbs-p4", durable=False, exclusive=True, auto_delete=True),
        "server-named": _declare(""),
    }
    for key, value in refused_arguments.items():
        actions[key] = _declare(f"sbs-{key}", arguments={key: value})
    for key, value in [
        ("x-max-age", "10x"),
        ("x-max-age", 5),
        ("x-max-age", "0D"),
        ("x-max-length-bytes", -1),
        ("x-stream-max-segment-size-bytes", 3_000_000_001),
        ("x-stream-max-segment-size-bytes", -5),
        ("x-initial-cluster-size", 0),
        ("x-queue-leader-locator", "nearest"),
    ]:
        actions[f"{key}={value!r}"] = _declare(f"sbs-bad{key}", arguments={key: value})
    for key, value in [
        ("x-max-age", "7D"),
        ("x-max-age", "12h"),
        ("x-max-length-bytes", 1_000_000),
        ("x-stream-max-segment-size-bytes", 100_000),
        ("x-initial-cluster-size", 3),
        ("x-queue-leader-locator", "balanced"),
    ]:
        name = f"sbs-ok{key}{value}"
        actions[f"accepted {key}={value!r}"] = _delete_then(
            name, _declare(name, arguments={key: value})
        )
    both(rabbitmq, leveret, actions)


def test_redeclare_equivalence(rabbitmq: RabbitNode, leveret: InProcessNode) -> None:
    name = "sbs-redeclare"
    both(
        rabbitmq,
        leveret,
        {
            "create": _delete_then(name, _declare(name, arguments={"x-max-age": "7D"})),
            "same": _declare(name, arguments={"x-max-age": "7D"}),
            "other age": _declare(name, arguments={"x-max-age": "8D"}),
            "no age": _declare(name),
            "more bytes": _declare(name, arguments={"x-max-age": "7D", "x-max-length-bytes": 100}),
            "non-durable": _declare(name, durable=False, arguments={"x-max-age": "7D"}),
            "no type": lambda ch: ch.queue_declare(name, durable=True).method.message_count,
            "classic": lambda ch: (
                ch.queue_declare(
                    name, durable=True, arguments={"x-queue-type": "classic", "x-max-age": "7D"}
                ).method.message_count
            ),
            "passive": lambda ch: ch.queue_declare(name, passive=True).method.message_count,
        },
    )


def _filled(name: str, count: int) -> Action:
    """A new stream holding `count` messages with properties and headers."""

    def action(ch: BlockingChannel) -> int:
        ch.queue_delete(name)
        declare_stream(ch, name)
        ch.confirm_delivery()
        for i in range(count):
            properties = pika.BasicProperties(
                content_type="text/plain", headers={"n": i}, delivery_mode=1 + i % 2
            )
            ch.basic_publish("", name, f"m{i}".encode(), properties)
        # RabbitMQ counts a stream's messages on a 5-second tick: wait until it has.
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            counted = int(ch.queue_declare(name, passive=True).method.message_count)
            if counted == count:
                return counted
            settle_quietly(ch, 0.2)
        return -1

    return action


def _deliveries(name: str, offset: Any, prefetch: int = 10) -> Action:
    """Everything a consumer from `offset` gets within a second, as the client sees it."""

    def action(ch: BlockingChannel) -> list[Any]:
        ch.basic_qos(prefetch_count=prefetch)
        got: list[Any] = []

        def on_message(channel: BlockingChannel, method: Any, props: Any, body: bytes) -> None:
            got.append(
                (
                    body,
                    props.headers,
                    props.content_type,
                    props.delivery_mode,
                    method.redelivered,
                    method.exchange,
                    method.routing_key,
                )
            )

        arguments = {} if offset is None else {"x-stream-offset": offset}
        ch.basic_consume(name, on_message, arguments=arguments)
        settle_quietly(ch, 1.0)
        return got

    return action


def test_offsets_and_deliveries(rabbitmq: RabbitNode, leveret: InProcessNode) -> None:
    name = "sbs-offsets"
    actions: dict[str, Action] = {"fill": _filled(name, 5)}
    for offset in [
        "first",
        "last",
        "next",
        None,
        0,
        2,
        100,
        -1,
        "1h",
        "10D",
        datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC),
    ]:
        actions[f"offset {offset!r}"] = _deliveries(name, offset)
    actions["prefetch 2 without acks"] = _deliveries(name, "first", prefetch=2)
    actions["count"] = lambda ch: ch.queue_declare(name, passive=True).method.message_count
    actions["delete"] = lambda ch: ch.queue_delete(name, if_empty=True).method.message_count
    both(rabbitmq, leveret, actions)


def test_refused_consumers_and_operations(rabbitmq: RabbitNode, leveret: InProcessNode) -> None:
    name = "sbs-refusals"

    def consume(
        offset: Any = "first", *, qos: tuple[int, ...] = (10,), no_ack: bool = False, **extra: Any
    ) -> Action:
        def action(ch: BlockingChannel) -> str:
            for index, prefetch in enumerate(qos):
                ch.basic_qos(prefetch_count=prefetch, global_qos=index == 1)
            arguments = {"x-stream-offset": offset, **extra}
            ch.basic_consume(name, lambda *_: None, auto_ack=no_ack, arguments=arguments)
            return "consuming"

        return action

    def settle_first(how: Callable[[BlockingChannel, int], None]) -> Action:
        def action(ch: BlockingChannel) -> str:
            ch.basic_qos(prefetch_count=10)
            tags: list[int] = []
            ch.basic_consume(
                name,
                lambda _c, method, _p, _b: tags.append(method.delivery_tag),
                arguments={"x-stream-offset": "first"},
            )
            deadline = time.monotonic() + 5
            while not tags and time.monotonic() < deadline:
                ch.connection.process_data_events(time_limit=0.05)
            how(ch, tags[0])
            settle_quietly(ch, 0.5)
            return "settled"

        return action

    both(
        rabbitmq,
        leveret,
        {
            "fill": _filled(name, 3),
            "no prefetch": consume(qos=()),
            "global prefetch only": consume(qos=(0, 10)),
            "global prefetch too": consume(qos=(10, 10)),
            "no-ack": consume(no_ack=True),
            "priority": consume(**{"x-priority": 3}),
            "interval 10x": consume("10x"),
            "interval 0s": consume("0s"),
            "unreadable interval": consume("foo"),
            "boolean offset": consume(True),
            "exclusive": lambda ch: (
                (
                    ch.basic_qos(prefetch_count=2),
                    ch.basic_consume(name, lambda *_: None, exclusive=True),
                )
                and "consuming"
            ),
            "get": lambda ch: ch.basic_get(name),
            "get no-ack": lambda ch: ch.basic_get(name, auto_ack=True),
            "purge": lambda ch: ch.queue_purge(name),
            "nack requeue": settle_first(lambda ch, tag: ch.basic_nack(tag, requeue=True)),
            "nack": settle_first(lambda ch, tag: ch.basic_nack(tag, requeue=False)),
            "reject": settle_first(lambda ch, tag: ch.basic_reject(tag, requeue=True)),
            "recover": settle_first(lambda ch, tag: ch.basic_recover(requeue=True)),
            "ack": settle_first(lambda ch, tag: ch.basic_ack(tag)),
        },
    )


def test_x_stream_offset_on_a_classic_queue(rabbitmq: RabbitNode, leveret: InProcessNode) -> None:
    def action(ch: BlockingChannel) -> str:
        ch.queue_declare("sbs-classic", durable=True)
        ch.basic_qos(prefetch_count=10)
        ch.basic_consume("sbs-classic", lambda *_: None, arguments={"x-stream-offset": "first"})
        return "consuming"

    both(rabbitmq, leveret, {"classic with x-stream-offset": action})


def test_credit_comes_back_with_acks(rabbitmq: RabbitNode, leveret: InProcessNode) -> None:
    name = "sbs-credit"

    def credit(ch: BlockingChannel) -> tuple[int, int]:
        ch.basic_qos(prefetch_count=2)
        tags: list[int] = []
        ch.basic_consume(
            name,
            lambda _c, method, _p, _b: tags.append(method.delivery_tag),
            arguments={"x-stream-offset": "first"},
        )
        settle_quietly(ch, 1.0)
        before = len(tags)
        ch.basic_ack(tags[-1], multiple=True)
        settle_quietly(ch, 1.0)
        return before, len(tags)

    def two_readers(ch: BlockingChannel) -> list[list[tuple[int, bytes]]]:
        return [read(ch, name, "first", count=4) for _ in range(2)]

    both(
        rabbitmq,
        leveret,
        {"fill": _filled(name, 4), "credit": credit, "again, independently": two_readers},
    )
    with pika.BlockingConnection(pika.URLParameters(leveret.url)) as conn:
        ch = conn.channel()
        ch.confirm_delivery()
        publish(ch, name, [b"later"])
        assert read(ch, name, "last", count=1) == [(4, b"later")]
