"""Queue features compared with a real RabbitMQ: priorities, limits, TTL, dead-lettering."""

from __future__ import annotations

import time
from typing import Any

import pika
import pika.exceptions
import pytest

from tests.interop.test_side_by_side import Transcript, _channel_error, _run
from tests.support.node import InProcessNode
from tests.support.rabbitmq import RabbitNode, rabbitmq  # noqa: F401 - fixture


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
def test_features_same_as_rabbitmq(node: InProcessNode, rabbitmq: RabbitNode) -> None:  # noqa: F811
    expected = _run(rabbitmq.url, features)
    got = _run(node.url, features)
    assert got == expected
