"""Priorities, length limits, TTLs, dead-lettering and queue expiry through real clients."""

from __future__ import annotations

import pika
import pika.exceptions
import pytest

from tests.support.node import InProcessNode, wait_for


def _drain(channel, queue: str) -> list[tuple[bytes, object, object]]:
    got = []
    while True:
        method, props, body = channel.basic_get(queue, auto_ack=True)
        if method is None:
            return got
        got.append((body, props, method))


def _count(channel, queue: str) -> int:
    return channel.queue_declare(queue, passive=True).method.message_count


def test_priority_order_then_fifo(channel) -> None:
    channel.queue_declare("prio", arguments={"x-max-priority": 5})
    for body, priority in [(b"a", 1), (b"b", 3), (b"c", 2), (b"d", None), (b"e", 9), (b"f", 3)]:
        channel.basic_publish("", "prio", body, pika.BasicProperties(priority=priority))
    # above the maximum counts as the maximum; missing counts as 0
    assert [b for b, _, _ in _drain(channel, "prio")] == [b"e", b"b", b"f", b"c", b"a", b"d"]


def test_priority_requeue_goes_back_in_order(channel) -> None:
    channel.queue_declare("prio-rq", arguments={"x-max-priority": 3})
    for body, priority in [(b"low", 1), (b"high", 3)]:
        channel.basic_publish("", "prio-rq", body, pika.BasicProperties(priority=priority))
    m, _, body = channel.basic_get("prio-rq")
    assert body == b"high"
    channel.basic_nack(m.delivery_tag, requeue=True)
    assert [b for b, _, _ in _drain(channel, "prio-rq")] == [b"high", b"low"]


def test_max_length_drop_head(channel) -> None:
    channel.queue_declare("dh", arguments={"x-max-length": 3})
    for i in range(6):
        channel.basic_publish("", "dh", str(i).encode())
    assert [b for b, _, _ in _drain(channel, "dh")] == [b"3", b"4", b"5"]


def test_max_length_bytes_counts_bodies(channel) -> None:
    channel.queue_declare("dhb", arguments={"x-max-length-bytes": 10})
    for body in [b"aaaa", b"bbbb", b"cccc"]:
        channel.basic_publish("", "dhb", body)
    assert [b for b, _, _ in _drain(channel, "dhb")] == [b"bbbb", b"cccc"]


def test_reject_publish_nacks_and_other_queues_keep_their_copy(channel) -> None:
    channel.confirm_delivery()
    channel.exchange_declare("fan-rp", "fanout")
    channel.queue_declare("limited", arguments={"x-max-length": 1, "x-overflow": "reject-publish"})
    channel.queue_declare("open")
    channel.queue_bind("limited", "fan-rp")
    channel.queue_bind("open", "fan-rp")
    channel.basic_publish("fan-rp", "", b"first")
    with pytest.raises(pika.exceptions.NackError):
        channel.basic_publish("fan-rp", "", b"second")
    assert _count(channel, "limited") == 1
    assert _count(channel, "open") == 2


def test_only_ready_messages_count_toward_the_limit(channel) -> None:
    channel.queue_declare(
        "ready-only", arguments={"x-max-length": 1, "x-overflow": "reject-publish"}
    )
    channel.basic_publish("", "ready-only", b"a")
    _delivered, _, _ = channel.basic_get("ready-only")  # now unacked, not ready
    channel.confirm_delivery()
    channel.basic_publish("", "ready-only", b"b")  # accepted
    assert _count(channel, "ready-only") == 1


def test_message_ttl_and_dead_letter(node: InProcessNode, channel) -> None:
    channel.queue_declare("dead")
    channel.queue_declare(
        "ttl",
        arguments={
            "x-message-ttl": 50,
            "x-dead-letter-exchange": "",
            "x-dead-letter-routing-key": "dead",
        },
    )
    channel.basic_publish("", "ttl", b"old", pika.BasicProperties(headers={"k": "v"}))
    wait_for(lambda: _count(channel, "dead") == 1, timeout=5)
    assert _count(channel, "ttl") == 0
    ((body, props, method),) = _drain(channel, "dead")
    assert body == b"old"
    assert method.routing_key == "dead"
    assert props.headers["k"] == "v"
    death = props.headers["x-death"][0]
    assert death["reason"] == "expired"
    assert death["queue"] == "ttl"
    assert death["count"] == 1
    assert death["exchange"] == ""
    assert death["routing-keys"] == ["ttl"]
    assert props.headers["x-first-death-reason"] == "expired"
    assert props.headers["x-first-death-queue"] == "ttl"


def test_per_message_expiration(channel) -> None:
    channel.queue_declare("per-msg")
    channel.basic_publish("", "per-msg", b"short", pika.BasicProperties(expiration="1"))
    channel.basic_publish("", "per-msg", b"long", pika.BasicProperties(expiration="60000"))
    wait_for(lambda: _count(channel, "per-msg") == 1, timeout=5)
    assert [b for b, _, _ in _drain(channel, "per-msg")] == [b"long"]


def test_invalid_expiration_is_refused(connection) -> None:
    ch = connection.channel()
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
        ch.basic_publish("", "x", b"x", pika.BasicProperties(expiration="-5"))
        ch.queue_declare("x")
    assert (info.value.reply_code, info.value.reply_text) == (
        406,
        "PRECONDITION_FAILED - invalid expiration '-5': {value_negative,-5}",
    )


def test_rejected_messages_are_dead_lettered(channel) -> None:
    channel.exchange_declare("dlx", "fanout")
    channel.queue_declare("graveyard")
    channel.queue_bind("graveyard", "dlx")
    channel.queue_declare("work-dl", arguments={"x-dead-letter-exchange": "dlx"})
    channel.basic_publish("", "work-dl", b"bad")
    m, _, _ = channel.basic_get("work-dl")
    channel.basic_reject(m.delivery_tag, requeue=False)
    ((body, props, method),) = _drain(channel, "graveyard")
    assert body == b"bad" and method.exchange == "dlx" and method.routing_key == "work-dl"
    assert props.headers["x-death"][0]["reason"] == "rejected"


def test_maxlen_dead_letter_and_count_increment(channel) -> None:
    channel.queue_declare(
        "overflow-dl",
        arguments={
            "x-max-length": 1,
            "x-dead-letter-exchange": "",
            "x-dead-letter-routing-key": "overflow-target",
        },
    )
    channel.queue_declare("overflow-target")
    channel.basic_publish("", "overflow-dl", b"1")
    channel.basic_publish("", "overflow-dl", b"2")
    ((body, props, _),) = _drain(channel, "overflow-target")
    assert body == b"1" and props.headers["x-death"][0]["reason"] == "maxlen"


def test_dead_letter_cycle_is_dropped(channel) -> None:
    # A queue that expires messages back into itself: the second death would be a cycle.
    channel.queue_declare("loop", arguments={"x-message-ttl": 20, "x-dead-letter-exchange": ""})
    channel.basic_publish("", "loop", b"x")
    wait_for(lambda: _count(channel, "loop") == 0, timeout=5)
    channel.connection.process_data_events(time_limit=0.2)
    assert _count(channel, "loop") == 0


def test_queue_expires_when_unused(node: InProcessNode, channel) -> None:
    channel.queue_declare("short-lived", arguments={"x-expires": 100})
    wait_for(
        lambda: "short-lived" not in node.call(lambda: set(node.broker.vhosts["/"].queues)),
        timeout=5,
    )


def test_queue_with_consumer_does_not_expire(node: InProcessNode, channel) -> None:
    channel.queue_declare("kept", arguments={"x-expires": 100})
    channel.basic_consume("kept", lambda *a: None, auto_ack=True)
    channel.connection.process_data_events(time_limit=0.4)
    assert "kept" in node.call(lambda: set(node.broker.vhosts["/"].queues))


def test_cc_and_bcc_route_too_and_bcc_is_removed(channel) -> None:
    for name in ("main", "copy", "blind"):
        channel.queue_declare(name)
    channel.basic_publish(
        "", "main", b"x", pika.BasicProperties(headers={"CC": ["copy"], "BCC": ["blind"]})
    )
    got = {name: _drain(channel, name) for name in ("main", "copy", "blind")}
    assert all(len(messages) == 1 for messages in got.values())
    for messages in got.values():
        ((_body, props, _method),) = messages
        assert props.headers == {"CC": ["copy"]}
