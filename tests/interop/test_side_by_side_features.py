"""Queue features compared with a real RabbitMQ: priorities, limits, TTL, dead-lettering."""

from __future__ import annotations

import time
from typing import Any

import pika
import pika.exceptions
import pytest
from pika.compat import long

from tests.interop.test_side_by_side import Transcript, _channel_error, _run
from tests.support.node import InProcessNode
from tests.support.rabbitmq import RabbitNode


def _without_times(headers: dict[str, Any] | None) -> Any:
    if not headers:
        return headers
    result = dict(headers)
    if "x-death" in result:
        result["x-death"] = [{k: v for k, v in d.items() if k != "time"} for d in result["x-death"]]
    return result


def _drain(ch, queue: str) -> list[Any]:
    got = []
    while True:
        method, props, body = ch.basic_get(queue, auto_ack=True)
        if method is None:
            return got
        got.append(
            (
                body,
                method.exchange,
                method.routing_key,
                method.redelivered,
                _without_times(props.headers),
                props.expiration,
                props.priority,
            )
        )


def _wait_count(ch, queue: str, count: int) -> None:
    deadline = time.monotonic() + 5
    while ch.queue_declare(queue, passive=True).method.message_count != count:
        if time.monotonic() > deadline:
            raise AssertionError(f"{queue} never held {count} messages")
        ch.connection.process_data_events(time_limit=0.02)


def features(conn: pika.BlockingConnection, seen: Transcript) -> None:
    ch = conn.channel()
    for name in ("ft-prio", "ft-dh", "ft-ttl", "ft-dead", "ft-rp", "ft-rej"):
        ch.queue_delete(name)
    ch.queue_declare("ft-prio", arguments={"x-max-priority": 3})
    for body, priority in [(b"a", 1), (b"b", 3), (b"c", 7), (b"d", None)]:
        ch.basic_publish("", "ft-prio", body, pika.BasicProperties(priority=priority))
    seen.append(_drain(ch, "ft-prio"))
    ch.queue_declare("ft-dh", arguments={"x-max-length": 2})
    for i in range(4):
        ch.basic_publish("", "ft-dh", str(i).encode())
    seen.append(_drain(ch, "ft-dh"))
    ch.queue_declare("ft-dead")
    ch.queue_declare(
        "ft-ttl",
        arguments={
            "x-message-ttl": 30,
            "x-dead-letter-exchange": "",
            "x-dead-letter-routing-key": "ft-dead",
        },
    )
    ch.basic_publish(
        "", "ft-ttl", b"expiring", pika.BasicProperties(headers={"h": 1}, expiration="10000")
    )
    _wait_count(ch, "ft-dead", 1)
    seen.append(_drain(ch, "ft-dead"))
    ch.queue_declare(
        "ft-rej", arguments={"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "ft-dead"}
    )
    ch.basic_publish("", "ft-rej", b"rejected")
    method, _, _ = ch.basic_get("ft-rej")
    ch.basic_reject(method.delivery_tag, requeue=False)
    _wait_count(ch, "ft-dead", 1)
    seen.append(_drain(ch, "ft-dead"))
    cch = conn.channel()
    cch.confirm_delivery()
    cch.queue_declare("ft-rp", arguments={"x-max-length": 1, "x-overflow": "reject-publish"})
    for body in (b"1", b"2"):
        try:
            cch.basic_publish("", "ft-rp", body)
            seen.append(("acked", body))
        except pika.exceptions.NackError:
            seen.append(("nacked", body))
    _channel_error(
        conn,
        seen,
        lambda c: (
            c.basic_publish("", "ft-rp", b"x", pika.BasicProperties(expiration="abc"))
            or c.queue_declare("ft-rp", passive=True).method.message_count
        ),
    )
    _channel_error(
        conn,
        seen,
        lambda c: (
            c.basic_publish("", "ft-rp", b"x", pika.BasicProperties(expiration="12x"))
            or c.queue_declare("ft-rp", passive=True).method.message_count
        ),
    )
    _channel_error(
        conn, seen, lambda c: c.queue_declare("ft-bad", arguments={"x-overflow": "nope"})
    )
    _channel_error(conn, seen, lambda c: c.queue_declare("ft-bad", arguments={"x-message-ttl": -1}))
    for name in ("ft-prio", "ft-dh", "ft-ttl", "ft-dead", "ft-rp", "ft-rej"):
        ch.queue_delete(name)


@pytest.mark.rabbitmq
def test_features_same_as_rabbitmq(node: InProcessNode, rabbitmq: RabbitNode) -> None:
    expected = _run(rabbitmq.url, features)
    got = _run(node.url, features)
    assert got == expected


def typed(value: Any) -> Any:
    """A decoded header value with the type pika gave each part (a long is not an int to a
    Java client, which casts x-death's count to Long); x-death's times left out."""
    if isinstance(value, dict):
        return {key: typed(item) for key, item in sorted(value.items()) if key != "time"}
    if isinstance(value, list):
        return [typed(item) for item in value]
    return None if value is None else (type(value).__name__, value)


def header_types(conn: pika.BlockingConnection, seen: Transcript) -> None:
    """Headers keep their wire types wherever the broker rewrites them: dead-lettering, BCC
    and direct reply-to."""
    headers = {
        "int": 5,
        "long": long(5),
        "big": 2**40,
        "flag": True,
        "nested": {"long": long(7), "list": [long(1), 2]},
    }
    ch = conn.channel()
    for name in ("ht-dead", "ht-rej", "ht-bcc", "ht-server"):
        ch.queue_delete(name)
        ch.queue_declare(
            name,
            arguments=(
                {"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "ht-dead"}
                if name == "ht-rej"
                else {}
            ),
        )
    ch.basic_publish("", "ht-rej", b"rejected", pika.BasicProperties(headers=headers))
    method, _, _ = ch.basic_get("ht-rej")
    ch.basic_reject(method.delivery_tag, requeue=False)
    _wait_count(ch, "ht-dead", 1)
    method, props, _ = ch.basic_get("ht-dead", auto_ack=True)
    seen.append(typed(props.headers))
    with_bcc = {**headers, "BCC": ["ht-bcc"]}
    ch.basic_publish("", "ht-dead", b"bcc", pika.BasicProperties(headers=with_bcc))
    method, props, _ = ch.basic_get("ht-bcc", auto_ack=True)
    seen.append(typed(props.headers))
    ch.basic_consume("amq.rabbitmq.reply-to", lambda *_: None, auto_ack=True)
    reply_to = pika.BasicProperties(headers=headers, reply_to="amq.rabbitmq.reply-to")
    ch.basic_publish("", "ht-server", b"request", reply_to)
    method, props, _ = ch.basic_get("ht-server", auto_ack=True)
    seen.append(typed(props.headers))
    for name in ("ht-dead", "ht-rej", "ht-bcc", "ht-server"):
        ch.queue_delete(name)


@pytest.mark.rabbitmq
def test_header_types_same_as_rabbitmq(node: InProcessNode, rabbitmq: RabbitNode) -> None:
    expected = _run(rabbitmq.url, header_types)
    assert ("long", 1) in [death["count"] for death in expected[0]["x-death"]], (
        "RabbitMQ's x-death count is a long"
    )
    assert _run(node.url, header_types) == expected
