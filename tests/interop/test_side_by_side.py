"""The same scenarios against Leveret and a real RabbitMQ: what the client sees must be the same."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pika
import pika.exceptions
import pytest

from tests.support.node import InProcessNode
from tests.support.rabbitmq import RabbitNode

Transcript = list[Any]


def _run(url: str, scenario: Callable[[pika.BlockingConnection, Transcript], None]) -> Transcript:
    seen: Transcript = []
    conn = pika.BlockingConnection(pika.URLParameters(url))
    try:
        scenario(conn, seen)
    except pika.exceptions.ConnectionClosedByBroker as exc:
        seen.append(("connection-closed", exc.reply_code, exc.reply_text))
    finally:
        if conn.is_open:
            conn.close()
    return seen


def _channel_error(
    conn: pika.BlockingConnection, seen: Transcript, action: Callable[[Any], Any]
) -> None:
    ch = conn.channel()
    try:
        result = action(ch)
        seen.append(("ok", result))
    except pika.exceptions.ChannelClosedByBroker as exc:
        seen.append(("channel-closed", exc.reply_code, exc.reply_text))


def declare_errors(conn: pika.BlockingConnection, seen: Transcript) -> None:
    prefix = "side-by-side-"
    ch = conn.channel()
    ch.queue_delete(prefix + "q")
    ch.queue_declare(prefix + "q", durable=False, arguments={"x-max-length": 10})
    _channel_error(
        conn, seen, lambda c: c.queue_declare(prefix + "q", durable=True).method.message_count
    )
    _channel_error(
        conn, seen, lambda c: c.queue_declare(prefix + "q", arguments={"x-max-length": 11})
    )
    _channel_error(
        conn,
        seen,
        lambda c: (
            c.queue_declare(
                prefix + "q", arguments={"x-max-length": 10, "x-unknown": 1}
            ).method.queue
        ),
    )
    _channel_error(conn, seen, lambda c: c.queue_declare(prefix + "q").method.queue)
    _channel_error(conn, seen, lambda c: c.queue_declare(prefix + "missing", passive=True))
    _channel_error(conn, seen, lambda c: c.queue_declare("amq.reserved"))
    _channel_error(
        conn, seen, lambda c: c.queue_declare(prefix + "bad", arguments={"x-max-length": -1})
    )
    _channel_error(
        conn, seen, lambda c: c.queue_declare(prefix + "bad", arguments={"x-max-priority": 256})
    )
    _channel_error(conn, seen, lambda c: c.exchange_declare("amq.mine", "direct"))
    _channel_error(conn, seen, lambda c: c.exchange_declare("amq.direct", "fanout"))
    _channel_error(conn, seen, lambda c: c.exchange_declare(prefix + "missing-ex", passive=True))
    _channel_error(conn, seen, lambda c: c.queue_bind(prefix + "q", prefix + "missing-ex"))
    _channel_error(conn, seen, lambda c: c.queue_bind(prefix + "missing", "amq.direct"))
    _channel_error(conn, seen, lambda c: c.queue_bind(prefix + "q", ""))
    _channel_error(conn, seen, lambda c: c.exchange_delete(""))
    _channel_error(conn, seen, lambda c: c.basic_get(""))
    _channel_error(
        conn, seen, lambda c: (c.basic_ack(7), c.queue_declare(prefix + "q").method.queue)[1]
    )
    ch.queue_delete(prefix + "q")


def routing(conn: pika.BlockingConnection, seen: Transcript) -> None:
    ch = conn.channel()
    names = ["rt-a", "rt-b", "rt-c"]
    for name in names:
        ch.queue_delete(name)
        ch.queue_declare(name)
    ch.exchange_delete("rt-topic")
    ch.exchange_delete("rt-headers")
    ch.exchange_declare("rt-topic", "topic")
    ch.exchange_declare("rt-headers", "headers")
    ch.queue_bind("rt-a", "rt-topic", "a.*.c")
    ch.queue_bind("rt-b", "rt-topic", "a.#")
    ch.queue_bind("rt-c", "rt-headers", arguments={"x-match": "any", "k": "v", "n": 1})
    for key in ["a.b.c", "a", "a.b.b.c", "b.a"]:
        ch.basic_publish("rt-topic", key, key.encode())
    for headers in [{"k": "v"}, {"n": 1}, {"k": "w"}]:
        ch.basic_publish(
            "rt-headers", "", str(headers).encode(), pika.BasicProperties(headers=headers)
        )
    for name in names:
        bodies = []
        while True:
            method, _props, body = ch.basic_get(name, auto_ack=True)
            if method is None:
                break
            bodies.append((body, method.routing_key, method.exchange))
        seen.append((name, bodies))
        ch.queue_delete(name)
    ch.exchange_delete("rt-topic")
    ch.exchange_delete("rt-headers")


def requeue_order(conn: pika.BlockingConnection, seen: Transcript) -> None:
    ch = conn.channel()
    ch.queue_delete("rq-order")
    ch.queue_declare("rq-order")
    for i in range(5):
        ch.basic_publish("", "rq-order", str(i).encode())
    tags = [ch.basic_get("rq-order")[0].delivery_tag for _ in range(3)]
    ch.basic_nack(tags[1], requeue=True)
    ch.basic_reject(tags[0], requeue=True)
    while True:
        method, _props, body = ch.basic_get("rq-order", auto_ack=True)
        if method is None:
            break
        seen.append((body, method.redelivered, method.message_count))
    ch.queue_delete("rq-order")


def mandatory_return(conn: pika.BlockingConnection, seen: Transcript) -> None:
    ch = conn.channel()
    ch.confirm_delivery()
    try:
        ch.basic_publish("amq.direct", "nobody-home", b"x", mandatory=True)
        seen.append("published")
    except pika.exceptions.UnroutableError as exc:
        seen.append([(r.method.reply_code, r.method.reply_text, r.body) for r in exc.messages])


SCENARIOS = [declare_errors, routing, requeue_order, mandatory_return]


@pytest.mark.rabbitmq
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.__name__)
def test_same_as_rabbitmq(scenario, node: InProcessNode, rabbitmq: RabbitNode) -> None:
    expected = _run(rabbitmq.url, scenario)
    got = _run(node.url, scenario)
    assert got == expected
