"""Publishing, consuming, acks and delivery order through pika and aio-pika."""

from __future__ import annotations

import asyncio

import aio_pika
import pika
import pytest

from tests.support.node import InProcessNode, wait_for


def test_publish_then_get(channel) -> None:
    channel.queue_declare("q1")
    props = pika.BasicProperties(content_type="text/plain", headers={"a": 1, "b": "x"}, priority=3)
    channel.basic_publish("", "q1", b"hello", props)
    method, properties, body = channel.basic_get("q1", auto_ack=True)
    assert body == b"hello"
    assert properties.content_type == "text/plain"
    assert properties.headers == {"a": 1, "b": "x"}
    assert properties.priority == 3
    assert method.message_count == 0
    assert method.redelivered is False
    assert method.exchange == ""
    assert method.routing_key == "q1"


def test_get_empty(channel) -> None:
    channel.queue_declare("q-empty")
    assert channel.basic_get("q-empty") == (None, None, None)


def test_declare_ok_counts_ready_messages(channel) -> None:
    channel.queue_declare("counted")
    for i in range(5):
        channel.basic_publish("", "counted", str(i).encode())
    result = channel.queue_declare("counted", passive=True)
    assert result.method.message_count == 5
    assert result.method.consumer_count == 0


def test_fifo_order_with_consumer(channel) -> None:
    channel.queue_declare("fifo")
    for i in range(100):
        channel.basic_publish("", "fifo", str(i).encode())
    received: list[int] = []
    for _method, _props, body in channel.consume("fifo", auto_ack=True, inactivity_timeout=5):
        received.append(int(body))
        if len(received) == 100:
            break
    channel.cancel()
    assert received == list(range(100))


def test_large_message_spans_frames(channel) -> None:
    channel.queue_declare("big")
    body = bytes(range(256)) * 2000  # 512 000 bytes, several frames at frame_max 131072
    channel.basic_publish("", "big", body)
    _method, _props, got = channel.basic_get("big", auto_ack=True)
    assert got == body


def test_empty_body(channel) -> None:
    channel.queue_declare("empty-body")
    channel.basic_publish("", "empty-body", b"")
    method, _props, body = channel.basic_get("empty-body", auto_ack=True)
    assert method is not None and body == b""


def test_reject_requeue_keeps_original_position(channel) -> None:
    channel.queue_declare("requeue")
    for i in range(3):
        channel.basic_publish("", "requeue", str(i).encode())
    m0, _, _b0 = channel.basic_get("requeue")
    m1, _, _b1 = channel.basic_get("requeue")
    channel.basic_reject(m0.delivery_tag, requeue=True)
    got = [channel.basic_get("requeue", auto_ack=True) for _ in range(2)]
    assert [(g[0].redelivered, g[2]) for g in got] == [(True, b"0"), (False, b"2")]
    channel.basic_nack(m1.delivery_tag, requeue=True)
    m, _, b = channel.basic_get("requeue", auto_ack=True)
    assert (m.redelivered, b) == (True, b"1")


def test_nack_without_requeue_drops(channel) -> None:
    channel.queue_declare("drop")
    channel.basic_publish("", "drop", b"x")
    m, _, _ = channel.basic_get("drop")
    channel.basic_nack(m.delivery_tag, requeue=False)
    assert channel.queue_declare("drop", passive=True).method.message_count == 0


def test_multiple_ack(channel) -> None:
    channel.queue_declare("multi")
    for _ in range(10):
        channel.basic_publish("", "multi", b"m")
    tags = [channel.basic_get("multi")[0].delivery_tag for _ in range(10)]
    channel.basic_ack(tags[6], multiple=True)
    channel.basic_recover(requeue=True)
    assert channel.queue_declare("multi", passive=True).method.message_count == 3


def test_unacked_requeued_when_channel_closes(connection) -> None:
    ch = connection.channel()
    ch.queue_declare("unacked")
    for i in range(4):
        ch.basic_publish("", "unacked", str(i).encode())
    for _ in range(4):
        ch.basic_get("unacked")
    ch.close()
    ch2 = connection.channel()
    bodies = []
    for _ in range(4):
        m, _, b = ch2.basic_get("unacked", auto_ack=True)
        assert m.redelivered
        bodies.append(b)
    assert bodies == [b"0", b"1", b"2", b"3"]


def test_unacked_requeued_when_connection_closes(node: InProcessNode) -> None:
    conn = pika.BlockingConnection(pika.URLParameters(node.url))
    ch = conn.channel()
    ch.queue_declare("unacked-conn")
    ch.basic_publish("", "unacked-conn", b"x")
    ch.basic_get("unacked-conn")
    conn.close()
    other = pika.BlockingConnection(pika.URLParameters(node.url))
    m, _, b = other.channel().basic_get("unacked-conn", auto_ack=True)
    assert m.redelivered and b == b"x"
    other.close()


def test_prefetch_limits_unacked_deliveries(node: InProcessNode, channel) -> None:
    channel.queue_declare("prefetch")
    for i in range(10):
        channel.basic_publish("", "prefetch", str(i).encode())
    channel.basic_qos(prefetch_count=3)
    got: list[int] = []
    channel.basic_consume("prefetch", lambda ch, m, p, b: got.append(m.delivery_tag))
    wait_for(lambda: (channel.connection.process_data_events(time_limit=0.05), len(got) >= 3)[1])
    queue = node.call(lambda: node.broker.vhosts["/"].queues["prefetch"])
    # A fourth delivery would break the limit: none may come within a while.
    channel.connection.process_data_events(time_limit=0.3)
    assert len(got) == 3
    assert node.call(lambda: (queue.message_count, queue.unacked)) == (7, 3)
    channel.basic_ack(got[-1], multiple=True)
    wait_for(lambda: (channel.connection.process_data_events(time_limit=0.05), len(got) == 6)[1])
    assert node.call(lambda: (queue.message_count, queue.unacked)) == (4, 3)


def test_round_robin_between_consumers(node: InProcessNode) -> None:
    conn = pika.BlockingConnection(pika.URLParameters(node.url))
    ch = conn.channel()
    ch.queue_declare("rr")
    seen: dict[str, int] = {"a": 0, "b": 0}
    ch.basic_consume(
        "rr",
        lambda c, m, p, b: seen.__setitem__("a", seen["a"] + 1),
        auto_ack=True,
        consumer_tag="a",
    )
    ch.basic_consume(
        "rr",
        lambda c, m, p, b: seen.__setitem__("b", seen["b"] + 1),
        auto_ack=True,
        consumer_tag="b",
    )
    for _ in range(10):
        ch.basic_publish("", "rr", b"x")
    wait_for(lambda: (conn.process_data_events(time_limit=0.05), sum(seen.values()) == 10)[1])
    assert seen == {"a": 5, "b": 5}
    conn.close()


def test_consumer_priorities(node: InProcessNode) -> None:
    conn = pika.BlockingConnection(pika.URLParameters(node.url))
    ch = conn.channel()
    ch.queue_declare("prio-consumers")
    seen: list[str] = []
    ch.basic_consume(
        "prio-consumers",
        lambda c, m, p, b: seen.append("low"),
        auto_ack=True,
        arguments={"x-priority": 1},
    )
    ch.basic_consume(
        "prio-consumers",
        lambda c, m, p, b: seen.append("high"),
        auto_ack=True,
        arguments={"x-priority": 10},
    )
    for _ in range(5):
        ch.basic_publish("", "prio-consumers", b"x")
    wait_for(lambda: (conn.process_data_events(time_limit=0.05), len(seen) == 5)[1])
    assert seen == ["high"] * 5
    conn.close()


def test_blocked_high_priority_consumer_lets_lower_one_receive(node: InProcessNode) -> None:
    conn = pika.BlockingConnection(pika.URLParameters(node.url))
    ch = conn.channel()
    ch.queue_declare("prio-blocked")
    ch.basic_qos(prefetch_count=1)
    seen: list[str] = []
    ch.basic_consume(
        "prio-blocked", lambda c, m, p, b: seen.append("high"), arguments={"x-priority": 10}
    )
    ch.basic_consume(
        "prio-blocked", lambda c, m, p, b: seen.append("low"), arguments={"x-priority": 1}
    )
    for _ in range(2):
        ch.basic_publish("", "prio-blocked", b"x")
    wait_for(lambda: (conn.process_data_events(time_limit=0.05), len(seen) == 2)[1])
    assert sorted(seen) == ["high", "low"]
    conn.close()


def test_single_active_consumer(node: InProcessNode) -> None:
    conn = pika.BlockingConnection(pika.URLParameters(node.url))
    ch = conn.channel()
    ch.queue_declare("sac", arguments={"x-single-active-consumer": True})
    seen: list[str] = []
    ch.basic_consume(
        "sac", lambda c, m, p, b: seen.append("first"), auto_ack=True, consumer_tag="first"
    )
    ch.basic_consume(
        "sac", lambda c, m, p, b: seen.append("second"), auto_ack=True, consumer_tag="second"
    )
    for _ in range(4):
        ch.basic_publish("", "sac", b"x")
    wait_for(lambda: (conn.process_data_events(time_limit=0.05), len(seen) == 4)[1])
    assert seen == ["first"] * 4
    ch.basic_cancel("first")
    ch.basic_publish("", "sac", b"x")
    wait_for(lambda: (conn.process_data_events(time_limit=0.05), len(seen) == 5)[1])
    assert seen[-1] == "second"
    conn.close()


def test_aio_pika_round_trip(node: InProcessNode) -> None:
    async def scenario() -> list[bytes]:
        conn = await aio_pika.connect_robust(node.url)
        async with conn:
            ch = await conn.channel()
            queue = await ch.declare_queue("aio", durable=False)
            for i in range(20):
                await ch.default_exchange.publish(
                    aio_pika.Message(body=str(i).encode()), routing_key="aio"
                )
            bodies: list[bytes] = []
            async with queue.iterator() as it:
                async for message in it:
                    async with message.process():
                        bodies.append(message.body)
                    if len(bodies) == 20:
                        break
            return bodies

    assert asyncio.run(scenario()) == [str(i).encode() for i in range(20)]


def test_publisher_confirms_pika(channel) -> None:
    channel.confirm_delivery()
    channel.queue_declare("confirmed")
    for _ in range(50):
        channel.basic_publish("", "confirmed", b"x")  # raises if nacked
    assert channel.queue_declare("confirmed", passive=True).method.message_count == 50


def test_mandatory_unroutable_is_returned(channel) -> None:
    channel.confirm_delivery()
    with pytest.raises(pika.exceptions.UnroutableError) as info:
        channel.basic_publish("amq.direct", "nowhere", b"lost", mandatory=True)
    returned = info.value.messages[0]
    assert returned.method.reply_code == 312
    assert returned.method.reply_text == "NO_ROUTE"
    assert returned.body == b"lost"


def test_transactions_commit_and_rollback(channel) -> None:
    channel.queue_declare("tx")
    channel.tx_select()
    channel.basic_publish("", "tx", b"rolled-back")
    channel.tx_rollback()
    assert channel.queue_declare("tx", passive=True).method.message_count == 0
    channel.basic_publish("", "tx", b"committed")
    assert channel.queue_declare("tx", passive=True).method.message_count == 0
    channel.tx_commit()
    assert channel.queue_declare("tx", passive=True).method.message_count == 1
    m, _, _ = channel.basic_get("tx")
    channel.basic_ack(m.delivery_tag)
    channel.tx_rollback()
    channel.basic_recover(requeue=True)
    assert channel.queue_declare("tx", passive=True).method.message_count == 1
