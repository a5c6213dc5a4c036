"""Direct reply-to: an RPC server replies to amq.rabbitmq.reply-to without declaring a queue."""

from __future__ import annotations

import pika
import pika.exceptions
import pytest

from tests.support.node import InProcessNode, wait_for


def test_rpc_round_trip(node: InProcessNode) -> None:
    client = pika.BlockingConnection(pika.URLParameters(node.url))
    server = pika.BlockingConnection(pika.URLParameters(node.url))
    cch, sch = client.channel(), server.channel()
    sch.queue_declare("rpc")
    replies: list[tuple[bytes, str]] = []
    cch.basic_consume(
        "amq.rabbitmq.reply-to",
        lambda c, m, p, b: replies.append((b, p.correlation_id)),
        auto_ack=True,
    )
    cch.basic_publish(
        "",
        "rpc",
        b"ping",
        pika.BasicProperties(reply_to="amq.rabbitmq.reply-to", correlation_id="c1"),
    )

    def request_arrived() -> tuple | None:
        got = sch.basic_get("rpc", auto_ack=True)
        return got if got[0] is not None else None

    _method, props, body = wait_for(request_arrived)
    assert body == b"ping"
    assert (
        props.reply_to.startswith("amq.rabbitmq.reply-to.")
        and props.reply_to != "amq.rabbitmq.reply-to."
    )
    sch.basic_publish(
        "", props.reply_to, b"pong", pika.BasicProperties(correlation_id=props.correlation_id)
    )
    wait_for(lambda: (client.process_data_events(time_limit=0.02), replies)[1])
    assert replies == [(b"pong", "c1")]
    client.close()
    server.close()


def test_reply_consumer_must_be_no_ack(connection) -> None:
    ch = connection.channel()
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
        ch.basic_consume("amq.rabbitmq.reply-to", lambda *a: None, auto_ack=False)
    assert (info.value.reply_code, info.value.reply_text) == (
        406,
        "PRECONDITION_FAILED - reply consumer cannot acknowledge",
    )


def test_request_without_reply_consumer(connection) -> None:
    ch = connection.channel()
    ch.queue_declare("rpc2")
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
        ch.basic_publish("", "rpc2", b"x", pika.BasicProperties(reply_to="amq.rabbitmq.reply-to"))
        ch.queue_declare("rpc2", passive=True)
    assert (info.value.reply_code, info.value.reply_text) == (
        406,
        "PRECONDITION_FAILED - fast reply consumer does not exist",
    )


def test_passive_declare_of_pseudo_queue(channel) -> None:
    assert channel.queue_declare("amq.rabbitmq.reply-to", passive=True).method.message_count == 0
