"""Deleting, unbinding, cancelling and purging what is not there, side by side with RabbitMQ.

RabbitMQ treats the removal of a missing queue, exchange or binding as done (delete-ok,
unbind-ok), answers cancel-ok for an unknown consumer tag, and refuses with 404 only what needs
the object to exist (purge, bind). Each scenario's transcript on Leveret must equal RabbitMQ's,
and must show the outcome written beside it, so the test also fails if both brokers changed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pika
import pytest
from pika.adapters.blocking_connection import BlockingChannel

from leveret.amqp import methods as m
from leveret.amqp.frames import method_frame
from tests.interop.test_side_by_side import Transcript, _channel_error, _run
from tests.support.node import InProcessNode
from tests.support.rabbitmq import RabbitNode
from tests.support.raw_client import RawClient

PREFIX = "missing-"
MISSING = PREFIX + "never-declared"


def _fresh(ch: BlockingChannel, queue: str, exchange: str | None = None) -> None:
    """A queue (and exchange) of the scenario's own, bound with key `k`, and nothing else."""
    ch.queue_delete(queue)
    ch.queue_declare(queue)
    if exchange is not None:
        ch.exchange_delete(exchange)
        ch.exchange_declare(exchange, "direct")
        ch.queue_bind(queue, exchange, "k")


def _method(result: Any) -> Any:
    """What a reply frame says, without pika's object identity."""
    method = result.method
    return (type(method).__name__, getattr(method, "message_count", None))


def queue_delete_missing(conn: pika.BlockingConnection, seen: Transcript) -> None:
    _channel_error(conn, seen, lambda c: _method(c.queue_delete(MISSING)))
    _channel_error(conn, seen, lambda c: _method(c.queue_delete(MISSING, if_empty=True)))
    _channel_error(conn, seen, lambda c: _method(c.queue_delete(MISSING, if_unused=True)))


def exchange_delete_missing(conn: pika.BlockingConnection, seen: Transcript) -> None:
    _channel_error(conn, seen, lambda c: _method(c.exchange_delete(MISSING)))
    _channel_error(conn, seen, lambda c: _method(c.exchange_delete(MISSING, if_unused=True)))


def queue_unbind_deleted_queue(conn: pika.BlockingConnection, seen: Transcript) -> None:
    """aio-pika's RPC.close(): the auto-delete reply queue is gone, then it is unbound."""
    queue, exchange = PREFIX + "q1", PREFIX + "x1"
    _fresh(conn.channel(), queue, exchange)
    conn.channel().queue_delete(queue)
    _channel_error(conn, seen, lambda c: _method(c.queue_unbind(queue, exchange, "k")))
    _channel_error(conn, seen, lambda c: _method(c.queue_unbind(MISSING, exchange, "k")))


def queue_unbind_missing_exchange(conn: pika.BlockingConnection, seen: Transcript) -> None:
    queue = PREFIX + "q2"
    _fresh(conn.channel(), queue)
    _channel_error(conn, seen, lambda c: _method(c.queue_unbind(queue, MISSING, "k")))


def queue_unbind_missing_binding(conn: pika.BlockingConnection, seen: Transcript) -> None:
    queue, exchange = PREFIX + "q3", PREFIX + "x3"
    _fresh(conn.channel(), queue, exchange)
    _channel_error(conn, seen, lambda c: _method(c.queue_unbind(queue, exchange, "other-key")))
    _channel_error(conn, seen, lambda c: _method(c.queue_unbind(queue, exchange, "k")))
    _channel_error(conn, seen, lambda c: _method(c.queue_unbind(queue, exchange, "k")))


def exchange_unbind_missing(conn: pika.BlockingConnection, seen: Transcript) -> None:
    source, destination = PREFIX + "src", PREFIX + "dst"
    ch = conn.channel()
    for name in (source, destination):
        ch.exchange_delete(name)
        ch.exchange_declare(name, "fanout")
    ch.exchange_bind(destination, source)
    _channel_error(conn, seen, lambda c: _method(c.exchange_unbind(MISSING, source)))
    _channel_error(conn, seen, lambda c: _method(c.exchange_unbind(destination, MISSING)))
    _channel_error(
        conn, seen, lambda c: _method(c.exchange_unbind(destination, source, "not-bound"))
    )
    _channel_error(conn, seen, lambda c: _method(c.exchange_unbind(destination, source)))
    _channel_error(conn, seen, lambda c: _method(c.exchange_unbind(destination, source)))


def purge_missing_queue(conn: pika.BlockingConnection, seen: Transcript) -> None:
    _channel_error(conn, seen, lambda c: _method(c.queue_purge(MISSING)))


def bind_missing_queue(conn: pika.BlockingConnection, seen: Transcript) -> None:
    """Binding needs both ends, unlike unbinding: 404 for each missing one."""
    _channel_error(conn, seen, lambda c: _method(c.queue_bind(MISSING, "amq.direct", "k")))
    queue = PREFIX + "q4"
    _fresh(conn.channel(), queue)
    _channel_error(conn, seen, lambda c: _method(c.queue_bind(queue, MISSING, "k")))


DELETED = ("ok", ("DeleteOk", 0))
UNBOUND = ("ok", ("UnbindOk", None))
EXPECTED: dict[Callable[[pika.BlockingConnection, Transcript], None], Transcript] = {
    queue_delete_missing: [DELETED] * 3,
    exchange_delete_missing: [("ok", ("DeleteOk", None))] * 2,
    queue_unbind_deleted_queue: [UNBOUND] * 2,
    queue_unbind_missing_exchange: [UNBOUND],
    queue_unbind_missing_binding: [UNBOUND] * 3,
    exchange_unbind_missing: [UNBOUND] * 5,
    purge_missing_queue: [
        ("channel-closed", 404, f"NOT_FOUND - no queue '{MISSING}' in vhost '/'")
    ],
    bind_missing_queue: [
        ("channel-closed", 404, f"NOT_FOUND - no queue '{MISSING}' in vhost '/'"),
        ("channel-closed", 404, f"NOT_FOUND - no exchange '{MISSING}' in vhost '/'"),
    ],
}


@pytest.mark.parametrize("scenario", list(EXPECTED), ids=lambda s: s.__name__)
def test_leveret_answers_as_written(
    scenario: Callable[[pika.BlockingConnection, Transcript], None], node: InProcessNode
) -> None:
    assert _run(node.url, scenario) == EXPECTED[scenario]


@pytest.mark.rabbitmq
@pytest.mark.parametrize("scenario", list(EXPECTED), ids=lambda s: s.__name__)
def test_same_as_rabbitmq(
    scenario: Callable[[pika.BlockingConnection, Transcript], None],
    node: InProcessNode,
    rabbitmq: RabbitNode,
) -> None:
    expected = _run(rabbitmq.url, scenario)
    assert expected == EXPECTED[scenario], "RabbitMQ answered otherwise than written here"
    assert _run(node.url, scenario) == expected


def cancel_unknown_tag(port: int) -> list[Any]:
    """basic.cancel of a tag no consumer has (pika checks tags itself, so this is a raw client)."""
    client = RawClient(port)
    try:
        client.handshake()
        client.send(method_frame(1, m.BasicCancel("no-such-consumer")))
        reply = client.read_method()
        client.send(method_frame(1, m.BasicCancel("silent", no_wait=True)))
        client.send(method_frame(1, m.QueueDeclare(queue="", exclusive=True)))
        after = client.read_method()
        return [reply, after is not None and type(after[1]).__name__]
    finally:
        client.close()


def test_cancel_of_an_unknown_tag_is_cancel_ok(node: InProcessNode) -> None:
    assert cancel_unknown_tag(node.port) == [
        (1, m.BasicCancelOk("no-such-consumer")),
        "QueueDeclareOk",
    ]


@pytest.mark.rabbitmq
def test_cancel_of_an_unknown_tag_same_as_rabbitmq(
    node: InProcessNode,
    rabbitmq: RabbitNode,
) -> None:
    assert cancel_unknown_tag(rabbitmq.amqp_port) == cancel_unknown_tag(node.port)
