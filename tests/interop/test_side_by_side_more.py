"""More scenarios run against Leveret and a real RabbitMQ: the transcripts must be the same.

Exchange errors, headers routing, prefetch delivery counts, transactions, publisher confirms (which
delivery tags are acked or nacked), get-ok counts, and requeue order with several consumers.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable
from typing import Any

import pika
import pika.exceptions
import pytest
from pika.adapters.blocking_connection import BlockingChannel

from leveret.amqp import methods as m
from leveret.amqp.frames import method_frame
from tests.interop.test_side_by_side import Transcript, _channel_error, _run
from tests.support.node import InProcessNode
from tests.support.rabbitmq import RabbitNode
from tests.support.raw_client import RawClient

PREFIX = "sbs-more-"


def _wait(
    predicate: Callable[[], Any], conn: pika.BlockingConnection, timeout: float = 10.0
) -> None:
    """Process the connection's events until predicate() holds (fails the scenario on timeout)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        conn.process_data_events(time_limit=0.02)


def _ready(conn: pika.BlockingConnection, queue: str) -> int:
    channel = conn.channel()
    count = channel.queue_declare(queue, passive=True).method.message_count
    channel.close()
    return count


def _drain(ch: BlockingChannel, queue: str) -> list[tuple[bytes, bool, int]]:
    got: list[tuple[bytes, bool, int]] = []
    for _ in range(1000):
        method, _props, body = ch.basic_get(queue, auto_ack=True)
        if method is None:
            return got
        got.append((body, method.redelivered, method.message_count))
    raise AssertionError("queue never emptied")


def _fresh_queue(ch: BlockingChannel, name: str, **kwargs: Any) -> str:
    ch.queue_delete(name)
    ch.queue_declare(name, **kwargs)
    return name


def _publish_confirmed(conn: pika.BlockingConnection, queue: str, bodies: list[bytes]) -> None:
    channel = conn.channel()
    channel.confirm_delivery()
    for body in bodies:
        channel.basic_publish("", queue, body)
    channel.close()


class _Consumers:
    """pika consumers on one or more channels, their deliveries in arrival order, unacknowledged."""

    def __init__(self) -> None:
        self.deliveries: list[tuple[str, int, bytes, bool]] = []

    def consume(self, ch: BlockingChannel, queue: str, tag: str) -> None:
        def on_message(_ch: Any, method: Any, _props: Any, body: bytes) -> None:
            self.deliveries.append(
                (method.consumer_tag, method.delivery_tag, body, method.redelivered)
            )

        ch.basic_consume(queue, on_message, consumer_tag=tag)

    def seen(self, since: int = 0) -> list[tuple[str, bytes, bool]]:
        return [(tag, body, redelivered) for tag, _dt, body, redelivered in self.deliveries[since:]]

    def count(self, tag: str) -> int:
        return sum(1 for d in self.deliveries if d[0] == tag)


# --- scenarios over pika --------------------------------------------------------------------------


def exchange_errors(conn: pika.BlockingConnection, seen: Transcript) -> None:
    direct, internal, q = PREFIX + "direct", PREFIX + "internal", PREFIX + "q"
    missing = PREFIX + "missing"
    ch = conn.channel()
    for name in (direct, internal, PREFIX + "ae-typed"):
        ch.exchange_delete(name)
    ch.exchange_declare(direct, "direct")
    ch.exchange_declare(internal, "fanout", internal=True)
    _fresh_queue(ch, q)
    ch.queue_bind(q, direct, "k")

    def ok(action: Callable[[BlockingChannel], Any]) -> Callable[[BlockingChannel], str]:
        return lambda c: (action(c), "ok")[1]

    def published(exchange: str) -> Callable[[BlockingChannel], str]:
        # A publish has no reply: a declare after it shows whether the channel survived.
        return ok(
            lambda c: (c.basic_publish(exchange, "k", b"x"), c.queue_declare(q, passive=True))
        )

    for action in [
        ok(lambda c: c.exchange_declare(direct, "fanout")),
        ok(lambda c: c.exchange_declare(direct, "direct", durable=True)),
        ok(lambda c: c.exchange_declare(direct, "direct", auto_delete=True)),
        ok(lambda c: c.exchange_declare(direct, "direct", internal=True)),
        ok(
            lambda c: c.exchange_declare(
                direct, "direct", arguments={"alternate-exchange": "elsewhere"}
            )
        ),
        ok(lambda c: c.exchange_declare(direct, "topic", passive=True)),
        ok(lambda c: c.exchange_declare(missing, passive=True)),
        ok(lambda c: c.exchange_declare("amq.custom", "direct")),
        ok(lambda c: c.exchange_declare("amq.direct", passive=True)),
        ok(
            lambda c: c.exchange_declare(
                PREFIX + "ae-typed", "direct", arguments={"alternate-exchange": 5}
            )
        ),
        ok(lambda c: c.exchange_delete(direct, if_unused=True)),
        ok(lambda c: c.exchange_delete("amq.topic")),
        ok(lambda c: c.exchange_delete("")),
        ok(lambda c: c.exchange_delete(missing)),
        ok(lambda c: c.exchange_bind(direct, missing, "k")),
        ok(lambda c: c.exchange_bind(missing, direct, "k")),
        ok(lambda c: c.exchange_bind("", direct, "k")),
        ok(lambda c: c.exchange_unbind(direct, missing, "k")),
        ok(lambda c: c.queue_unbind(q, missing, "k")),
        ok(lambda c: c.queue_bind(q, "amq.headers", arguments={"x-match": "nope"})),
        ok(lambda c: c.queue_bind(q, "amq.headers", arguments={"x-match": 1})),
        published(internal),
        published(missing),
        published(direct),
    ]:
        _channel_error(conn, seen, action)
    seen.append(("routed", _drain(ch, q)))
    ch.queue_delete(q)
    ch.exchange_delete(direct)
    ch.exchange_delete(internal)
    # Last: an unknown type closes the whole connection.
    ch.exchange_declare(PREFIX + "odd", "x-no-such-type")
    seen.append("connection survived an unknown exchange type")


def headers_routing(conn: pika.BlockingConnection, seen: Transcript) -> None:
    ch = conn.channel()
    exchange = PREFIX + "headers"
    ch.exchange_delete(exchange)
    ch.exchange_declare(exchange, "headers")
    bindings: list[dict[str, Any]] = [
        {"x-match": "all", "a": 1, "b": "two"},
        {"x-match": "any", "a": 1, "b": "two"},
        {"a": 1},
        {"x-match": "all", "x-extra": "e", "a": 1},
        {"x-match": "all-with-x", "x-extra": "e", "a": 1},
        {"x-match": "any-with-x", "x-extra": "e"},
        {"x-match": "any"},
        {"x-match": "all"},
        {"x-match": "all", "a": None},
        {"x-match": "any", "flag": True, "list": [1, 2], "table": {"k": "v"}},
    ]
    queues = []
    for index, arguments in enumerate(bindings):
        queues.append(_fresh_queue(ch, f"{PREFIX}h{index}"))
        ch.queue_bind(queues[-1], exchange, "ignored", arguments=arguments)
    messages: list[dict[str, Any] | None] = [
        None,
        {},
        {"a": 1},
        {"a": 1, "b": "two"},
        {"a": "1", "b": "two"},
        {"a": 2, "b": "three"},
        {"a": 1, "x-extra": "e"},
        {"x-extra": "e"},
        {"a": None},
        {"flag": True},
        {"flag": 1},
        {"list": [1, 2]},
        {"list": [2, 1]},
        {"table": {"k": "v"}},
        {"b": "two", "x-match": "any"},
    ]
    for index, headers in enumerate(messages):
        ch.basic_publish(exchange, "k", str(index).encode(), pika.BasicProperties(headers=headers))
    for queue in queues:
        seen.append((queue, [int(body) for body, _r, _c in _drain(ch, queue)]))
        ch.queue_delete(queue)
    ch.exchange_delete(exchange)


def _prefetch_round(
    conn: pika.BlockingConnection, queue: str, total: int, qos: tuple[int | None, int | None]
) -> list[Any]:
    """Three consumers on one channel with (per consumer, global) prefetch: who got how many."""
    per_consumer, shared = qos
    ch = conn.channel()
    if per_consumer is not None:
        ch.basic_qos(prefetch_count=per_consumer)
    if shared is not None:
        ch.basic_qos(prefetch_count=shared, global_qos=True)
    consumers = _Consumers()
    tags = ["c1", "c2", "c3"]
    for tag in tags:
        consumers.consume(ch, queue, tag)
    _wait(lambda: len(consumers.deliveries) + _ready(conn, queue) == total, conn)
    delivered = len(consumers.deliveries)
    seen: list[Any] = [(qos, [consumers.count(tag) for tag in tags], total - delivered)]
    ch.basic_ack(consumers.deliveries[0][1])
    if delivered < total:
        # One slot freed: exactly one more delivery.
        _wait(lambda: len(consumers.deliveries) == delivered + 1, conn)
        seen.append(("after one ack", [consumers.count(tag) for tag in tags], _ready(conn, queue)))
    ch.close()  # the unacknowledged ones go back
    _wait(lambda: _ready(conn, queue) == total - 1, conn)
    _publish_confirmed(conn, queue, [b"refill"])
    return seen


def qos_prefetch(conn: pika.BlockingConnection, seen: Transcript) -> None:
    queue = _fresh_queue(conn.channel(), PREFIX + "qos")
    total = 20
    _publish_confirmed(conn, queue, [str(i).encode() for i in range(total)])
    for qos in [(2, None), (None, 3), (2, 5), (3, 2), (0, 0), (1, None)]:
        seen.extend(_prefetch_round(conn, queue, total, qos))
    conn.channel().queue_delete(queue)


def tx_semantics(conn: pika.BlockingConnection, seen: Transcript) -> None:
    queue = _fresh_queue(conn.channel(), PREFIX + "tx")
    ch = conn.channel()
    returned: list[Any] = []
    ch.add_on_return_callback(
        lambda _c, method, _p, body: returned.append((method.reply_code, method.reply_text, body))
    )
    ch.tx_select()
    ch.basic_publish("", queue, b"1")
    seen.append(("published, not committed", _ready(conn, queue)))
    ch.tx_commit()
    seen.append(("committed", _ready(conn, queue)))
    ch.basic_publish("", queue, b"2")
    ch.tx_rollback()
    seen.append(("rolled back", _ready(conn, queue)))
    method, _props, body = ch.basic_get(queue)
    seen.append(("got", body, method.message_count))
    ch.basic_ack(method.delivery_tag)
    ch.tx_rollback()  # the ack is undone: the message stays unacknowledged
    seen.append(("ack rolled back", _ready(conn, queue)))
    ch.basic_nack(method.delivery_tag, requeue=True)
    seen.append(("nack pending", _ready(conn, queue)))
    ch.tx_commit()
    seen.append(("nack committed", _ready(conn, queue)))
    method, _props, body = ch.basic_get(queue)
    seen.append(("got again", body, method.redelivered))
    ch.basic_ack(method.delivery_tag)
    ch.basic_publish("", PREFIX + "no-such-queue", b"unroutable", mandatory=True)
    ch.tx_commit()
    _wait(lambda: bool(returned), conn)
    seen.append(("returned", returned, _ready(conn, queue)))
    # An acknowledgement inside a transaction frees the consumer's prefetch slot only on commit.
    _publish_confirmed(conn, queue, [b"p1", b"p2"])
    ch.basic_qos(prefetch_count=1)
    consumers = _Consumers()
    consumers.consume(ch, queue, "tx-consumer")
    _wait(lambda: len(consumers.deliveries) == 1, conn)
    ch.basic_ack(consumers.deliveries[0][1])
    seen.append(
        ("acked, not committed", ch.queue_declare(queue, passive=True).method.message_count)
    )
    ch.tx_commit()
    _wait(lambda: len(consumers.deliveries) == 2, conn)
    seen.append(
        (
            "after commit",
            consumers.seen(),
            ch.queue_declare(queue, passive=True).method.message_count,
        )
    )
    ch.basic_cancel("tx-consumer")
    _channel_error(conn, seen, lambda c: c.tx_commit())
    _channel_error(conn, seen, lambda c: c.tx_rollback())
    _channel_error(conn, seen, lambda c: (c.tx_select(), c.confirm_delivery()))
    _channel_error(conn, seen, lambda c: (c.confirm_delivery(), c.tx_select()))
    _channel_error(conn, seen, lambda c: (c.tx_select(), c.basic_ack(99), c.tx_commit(), "ok")[-1])
    _channel_error(conn, seen, lambda c: (c.tx_select(), c.tx_select(), "ok")[-1])
    conn.channel().queue_delete(queue)


def get_ok_counts(conn: pika.BlockingConnection, seen: Transcript) -> None:
    ch = conn.channel()
    queue = _fresh_queue(ch, PREFIX + "counts")
    _publish_confirmed(conn, queue, [str(i).encode() for i in range(6)])
    declared = ch.queue_declare(queue, passive=True).method
    seen.append(("declare-ok", declared.message_count, declared.consumer_count))
    held = []
    for _ in range(3):
        method, _props, body = ch.basic_get(queue)
        held.append(method.delivery_tag)
        seen.append(("get-ok", body, method.message_count, method.redelivered, method.delivery_tag))
    ch.basic_reject(held[1], requeue=True)
    ch.basic_nack(held[2], requeue=False)
    seen.append(("after reject and nack", _ready(conn, queue)))
    other = conn.channel()
    other.basic_consume(queue, lambda *args: None)
    declared = ch.queue_declare(queue, passive=True).method
    seen.append(("declare-ok with consumer", declared.consumer_count))
    other.close()
    seen.append(("after the consumer's channel closed", _ready(conn, queue)))
    seen.append(("purge-ok", ch.queue_purge(queue).method.message_count))
    _publish_confirmed(conn, queue, [b"a", b"b"])
    seen.append(("delete-ok", ch.queue_delete(queue).method.message_count))
    seen.append(("held tag acked after delete", ch.basic_ack(held[0]) or "ok"))
    seen.append(("empty", ch.basic_get(_fresh_queue(ch, queue))))
    ch.queue_delete(queue)


def requeue_order_with_several_consumers(conn: pika.BlockingConnection, seen: Transcript) -> None:
    queue = _fresh_queue(conn.channel(), PREFIX + "requeue")
    first, second = conn.channel(), conn.channel()
    first.basic_qos(prefetch_count=2)
    second.basic_qos(prefetch_count=10)
    consumers = _Consumers()
    consumers.consume(first, queue, "first")
    consumers.consume(second, queue, "second")
    total = 6
    _publish_confirmed(conn, queue, [str(i).encode() for i in range(total)])
    _wait(lambda: len(consumers.deliveries) == total, conn)
    seen.append(("initial", consumers.seen()))
    mark = len(consumers.deliveries)
    first.close()  # its two come back, ahead of nothing else: the second consumer takes them
    _wait(lambda: len(consumers.deliveries) == mark + 2, conn)
    seen.append(("after first closed", consumers.seen(mark)))
    mark = len(consumers.deliveries)
    last_tag = consumers.deliveries[-1][1]
    second.basic_nack(last_tag, multiple=True, requeue=True)
    _wait(lambda: len(consumers.deliveries) == mark + total, conn)
    seen.append(("after nack multiple", consumers.seen(mark)))
    second.close()
    seen.append(("ready at the end", _ready(conn, queue)))
    conn.channel().queue_delete(queue)


SCENARIOS = [
    exchange_errors,
    headers_routing,
    qos_prefetch,
    tx_semantics,
    get_ok_counts,
    requeue_order_with_several_consumers,
]


@pytest.mark.rabbitmq
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.__name__)
def test_same_as_rabbitmq(
    scenario: Callable[[pika.BlockingConnection, Transcript], None],
    node: InProcessNode,
    rabbitmq: RabbitNode,
) -> None:
    expected = _run(rabbitmq.url, scenario)
    got = _run(node.url, scenario)
    assert got == expected


# --- publisher confirms over a raw socket: which delivery tags are acked or nacked ----------------


def _publish(
    channel: int, exchange: str, routing_key: str, body: bytes, mandatory: bool = False
) -> bytes:
    return (
        method_frame(
            channel, m.BasicPublish(exchange=exchange, routing_key=routing_key, mandatory=mandatory)
        )
        + struct.pack(">BHI", 2, channel, 14)
        + struct.pack(">HHQH", 60, 0, len(body), 0)
        + b"\xce"
        + struct.pack(">BHI", 3, channel, len(body))
        + body
        + b"\xce"
    )


def confirm_transcript(port: int) -> Transcript:
    """Publish in confirm mode to an ordinary queue, a full reject-publish queue, nowhere
    (mandatory), then to a missing exchange; record every tag settled, one by one, and the
    returns between."""
    queue, limited = PREFIX + "confirm", PREFIX + "confirm-limited"
    seen: Transcript = []
    raw = RawClient(port)
    try:
        raw.handshake()
        setup = b"".join(
            method_frame(1, method)
            for method in (
                m.QueueDelete(queue=queue),
                m.QueueDelete(queue=limited),
                m.QueueDeclare(queue=queue),
                m.QueueDeclare(
                    queue=limited, arguments={"x-max-length": 1, "x-overflow": "reject-publish"}
                ),
                m.ConfirmSelect(),
            )
        )
        raw.send(setup)
        replies = [raw.read_method() for _ in range(5)]
        seen.append([type(reply[1]).__name__ for reply in replies if reply is not None])
        raw.send(
            _publish(1, "", queue, b"1")
            + _publish(1, "", limited, b"2")
            + _publish(1, "", limited, b"3")  # the queue is full: nacked
            + _publish(1, "amq.direct", "nobody", b"4", mandatory=True)  # returned, then acked
            + _publish(1, "", queue, b"5")
            + _publish(1, "amq.direct", "nobody", b"6")  # unroutable, not mandatory: acked
        )
        # Confirms may come out of order (RabbitMQ confirms unroutable messages before queued
        # ones), so the transcript is each tag's outcome, and whether a return came before its ack.
        outstanding = set(range(1, 7))
        outcomes: dict[int, str] = {}
        returned_before_ack = False
        for _ in range(50):
            result = raw.read_method()
            assert result is not None
            method = result[1]
            if isinstance(method, m.BasicReturn):
                seen.append(("return", method.reply_code, method.reply_text, method.routing_key))
                returned_before_ack = 4 in outstanding
                continue
            assert isinstance(method, (m.BasicAck, m.BasicNack)), method
            tags = (
                {t for t in outstanding if t <= method.delivery_tag}
                if method.multiple
                else {method.delivery_tag}
            )
            assert tags <= outstanding, f"tags settled twice: {tags - outstanding}"
            outstanding -= tags
            outcomes.update(
                (tag, "ack" if isinstance(method, m.BasicAck) else "nack") for tag in tags
            )
            if not outstanding:
                break
        seen.append(sorted(outcomes.items()))
        seen.append(("returned before acked", returned_before_ack))
        raw.send(_publish(1, PREFIX + "no-such-exchange", "k", b"7"))
        for _ in range(10):
            result = raw.read_method()
            assert result is not None
            if isinstance(result[1], m.ChannelClose):
                seen.append(("channel closed", result[1].reply_code, result[1].reply_text))
                break
            seen.append(type(result[1]).__name__)
    finally:
        raw.close()
    return seen


@pytest.mark.rabbitmq
def test_confirms_same_as_rabbitmq(node: InProcessNode, rabbitmq: RabbitNode) -> None:
    expected = confirm_transcript(rabbitmq.amqp_port)
    assert confirm_transcript(node.port) == expected
