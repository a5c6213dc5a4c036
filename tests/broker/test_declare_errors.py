"""Declaration rules and their errors: RabbitMQ's reply codes and texts; the node keeps working."""

from __future__ import annotations

import pika
import pika.exceptions
import pytest

from leveret.amqp import methods as m
from leveret.amqp.frames import method_frame
from tests.support.node import InProcessNode, wait_for
from tests.support.raw_client import RawClient


def _channel_error(connection, action) -> tuple[int, str]:
    ch = connection.channel()
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
        action(ch)
    return info.value.reply_code, info.value.reply_text


def test_passive_declare_of_missing_queue(connection) -> None:
    code, text = _channel_error(connection, lambda ch: ch.queue_declare("missing", passive=True))
    assert (code, text) == (404, "NOT_FOUND - no queue 'missing' in vhost '/'")
    # the connection and a new channel keep working
    assert connection.channel().queue_declare("after").method.queue == "after"


def test_inequivalent_durable(connection) -> None:
    connection.channel().queue_declare("q", durable=False)
    code, text = _channel_error(connection, lambda ch: ch.queue_declare("q", durable=True))
    assert code == 406
    assert text == (
        "PRECONDITION_FAILED - inequivalent arg 'durable' for queue 'q' in vhost '/': "
        "received 'true' but current is 'false'"
    )


def test_reserved_amq_prefix(connection) -> None:
    code, text = _channel_error(connection, lambda ch: ch.queue_declare("amq.mine"))
    assert (code, text) == (
        403,
        "ACCESS_REFUSED - queue name 'amq.mine' contains reserved prefix 'amq.*'",
    )
    # case-sensitive, and a passive declare of an amq.* name is a plain 404
    assert connection.channel().queue_declare("AMQ.mine").method.queue == "AMQ.mine"
    code, _ = _channel_error(connection, lambda ch: ch.queue_declare("amq.none", passive=True))
    assert code == 404


def test_server_named_queue_and_empty_name_shorthand(channel) -> None:
    name = channel.queue_declare("", exclusive=True).method.queue
    assert name.startswith("amq.gen-") and len(name) == len("amq.gen-") + 22
    channel.queue_bind("", "amq.direct", routing_key="k")
    channel.basic_publish("amq.direct", "k", b"via-binding")
    _method, _, body = channel.basic_get("", auto_ack=True)
    assert body == b"via-binding"
    assert channel.queue_purge("").method.message_count == 0
    assert channel.queue_delete("").method.message_count == 0


def test_empty_name_without_previous_declare(connection) -> None:
    code, text = _channel_error(connection, lambda ch: ch.basic_get(""))
    assert (code, text) == (404, "NOT_FOUND - no previously declared queue")


def test_exclusive_queue_locked_for_other_connections(node: InProcessNode, connection) -> None:
    connection.channel().queue_declare("mine", exclusive=True)
    other = pika.BlockingConnection(pika.URLParameters(node.url))
    try:
        code, text = _channel_error(other, lambda ch: ch.queue_declare("mine", passive=True))
        assert code == 405
        assert text.startswith(
            "RESOURCE_LOCKED - cannot obtain exclusive access to locked queue 'mine'"
        )
        code, _ = _channel_error(other, lambda ch: ch.basic_get("mine"))
        assert code == 405
    finally:
        other.close()


def test_exclusive_queue_deleted_with_connection(node: InProcessNode) -> None:
    conn = pika.BlockingConnection(pika.URLParameters(node.url))
    conn.channel().queue_declare("gone-with-conn", exclusive=True)
    conn.close()
    other = pika.BlockingConnection(pika.URLParameters(node.url))
    try:
        code, _ = _channel_error(other, lambda ch: ch.queue_declare("gone-with-conn", passive=True))
        assert code == 404
    finally:
        other.close()


def test_redeclare_as_exclusive_is_locked(connection) -> None:
    connection.channel().queue_declare("shared")
    code, _ = _channel_error(connection, lambda ch: ch.queue_declare("shared", exclusive=True))
    assert code == 405


def test_auto_delete_after_last_consumer(node: InProcessNode, channel) -> None:
    channel.queue_declare("ad", auto_delete=True)
    # no consumer yet: it stays
    assert "ad" in node.call(lambda: set(node.broker.vhosts["/"].queues))
    tag = channel.basic_consume("ad", lambda *a: None)
    channel.basic_cancel(tag)
    assert "ad" not in node.call(lambda: set(node.broker.vhosts["/"].queues))


def test_delete_if_unused_and_if_empty(connection) -> None:
    ch = connection.channel()
    ch.queue_declare("busy")
    ch.basic_publish("", "busy", b"x")
    code, text = _channel_error(connection, lambda c: c.queue_delete("busy", if_empty=True))
    assert (code, text) == (406, "PRECONDITION_FAILED - queue 'busy' in vhost '/' not empty")
    ch.basic_consume("busy", lambda *a: None, auto_ack=True)
    code, text = _channel_error(connection, lambda c: c.queue_delete("busy", if_unused=True))
    assert (code, text) == (406, "PRECONDITION_FAILED - queue 'busy' in vhost '/' in use")


def test_consumer_cancelled_when_queue_deleted(node: InProcessNode, connection) -> None:
    ch = connection.channel()
    ch.queue_declare("doomed")
    cancelled: list[str] = []
    ch.add_on_cancel_callback(lambda frame: cancelled.append(frame.method.consumer_tag))
    ch.basic_consume("doomed", lambda *a: None, consumer_tag="ctag-1")
    connection.channel().queue_delete("doomed")
    wait_for(lambda: (connection.process_data_events(time_limit=0.05), cancelled)[1])
    assert cancelled == ["ctag-1"]


def test_unknown_delivery_tag(connection) -> None:
    code, text = _channel_error(connection, lambda ch: (ch.basic_ack(42), ch.queue_declare("x")))
    assert (code, text) == (406, "PRECONDITION_FAILED - unknown delivery tag 42")


def test_double_ack(connection) -> None:
    def act(ch) -> None:
        ch.queue_declare("dbl")
        ch.basic_publish("", "dbl", b"x")
        m, _, _ = ch.basic_get("dbl")
        ch.basic_ack(m.delivery_tag)
        ch.basic_ack(m.delivery_tag)
        ch.queue_declare("dbl")

    code, text = _channel_error(connection, act)
    assert (code, text) == (406, "PRECONDITION_FAILED - unknown delivery tag 1")


def test_exclusive_consumer(connection) -> None:
    ch = connection.channel()
    ch.queue_declare("solo")
    ch.basic_consume("solo", lambda *a: None, exclusive=True)
    code, text = _channel_error(connection, lambda c: c.basic_consume("solo", lambda *a: None))
    assert (code, text) == (403, "ACCESS_REFUSED - queue 'solo' in vhost '/' in exclusive use")


def test_reuse_of_consumer_tag_closes_connection(node: InProcessNode) -> None:
    raw = RawClient(node.port)
    raw.handshake()
    raw.send(method_frame(1, m.QueueDeclare(queue="tags")))
    raw.send(method_frame(1, m.BasicConsume(queue="tags", consumer_tag="same")))
    raw.send(method_frame(1, m.BasicConsume(queue="tags", consumer_tag="same")))
    close = raw.expect_connection_close()
    assert (close.reply_code, close.reply_text) == (
        530,
        "NOT_ALLOWED - attempt to reuse consumer tag 'same'",
    )
    assert (close.class_id, close.method_id) == (60, 20)
    raw.close()


def test_publish_to_missing_exchange(connection) -> None:
    code, text = _channel_error(
        connection, lambda ch: (ch.basic_publish("nope", "k", b"x"), ch.queue_declare("y"))
    )
    assert (code, text) == (404, "NOT_FOUND - no exchange 'nope' in vhost '/'")


def test_tx_and_confirm_modes_exclude_each_other(connection) -> None:
    def confirm_then_tx(ch) -> None:
        ch.confirm_delivery()
        ch.tx_select()

    code, text = _channel_error(connection, confirm_then_tx)
    assert (code, text) == (406, "PRECONDITION_FAILED - cannot switch from confirm to tx mode")
    code, text = _channel_error(connection, lambda ch: ch.tx_commit())
    assert (code, text) == (406, "PRECONDITION_FAILED - channel is not transactional")


def test_wrong_password(node: InProcessNode) -> None:
    params = pika.URLParameters(f"amqp://guest:wrong@127.0.0.1:{node.port}/")
    with pytest.raises(pika.exceptions.ProbableAuthenticationError) as info:
        pika.BlockingConnection(params)
    assert "ACCESS_REFUSED" in str(info.value)
    # the node still serves others
    ok = pika.BlockingConnection(pika.URLParameters(node.url))
    ok.close()


def test_unknown_vhost(node: InProcessNode) -> None:
    params = pika.URLParameters(f"amqp://guest:guest@127.0.0.1:{node.port}/nowhere")
    with pytest.raises(pika.exceptions.ProbableAccessDeniedError) as info:
        pika.BlockingConnection(params)
    assert "(530) 'NOT_ALLOWED - vhost nowhere not found'" in str(info.value)


def test_permissions_are_enforced(node: InProcessNode) -> None:
    node.add_user("carol", "pw", ("^carol-", "^carol-|^amq\\.default$", "^carol-"))
    conn = pika.BlockingConnection(pika.URLParameters(f"amqp://carol:pw@127.0.0.1:{node.port}/"))
    try:
        conn.channel().queue_declare("carol-q")
        code, text = _channel_error(conn, lambda ch: ch.queue_declare("other-q"))
        assert (code, text) == (
            403,
            "ACCESS_REFUSED - access to queue 'other-q' in vhost '/' refused for user 'carol'",
        )
        code, text = _channel_error(
            conn, lambda ch: (ch.basic_publish("amq.topic", "k", b"x"), ch.queue_declare("carol-q"))
        )
        assert (code, text) == (
            403,
            "ACCESS_REFUSED - access to exchange 'amq.topic' in vhost '/' refused for user 'carol'",
        )
        ch = conn.channel()
        ch.basic_publish("", "carol-q", b"mine")
        assert ch.basic_get("carol-q", auto_ack=True)[2] == b"mine"
    finally:
        conn.close()
