"""Where stream consumers start and what they get: offsets, timestamps, independent readers,
the tail, and what management shows."""

from __future__ import annotations

import datetime
import json
import time
import urllib.request
from base64 import b64encode
from collections.abc import Iterator

import pika
import pytest
from pika.adapters.blocking_connection import BlockingChannel

from tests.streams.support import declare_stream, publish, read, settle_quietly
from tests.support.node import InProcessNode


@pytest.fixture
def ch(node: InProcessNode) -> Iterator[BlockingChannel]:
    with pika.BlockingConnection(pika.URLParameters(node.url)) as conn:
        channel = conn.channel()
        channel.confirm_delivery()
        yield channel


def _bodies(count: int, prefix: str = "m") -> list[bytes]:
    return [f"{prefix}{i}".encode() for i in range(count)]


def test_first_last_next_and_numeric_offsets(ch: BlockingChannel) -> None:
    declare_stream(ch, "events")
    publish(ch, "events", _bodies(10))
    everything = [(i, f"m{i}".encode()) for i in range(10)]
    assert read(ch, "events", "first", count=10) == everything
    assert read(ch, "events", "last", count=1) == [(9, b"m9")]
    assert read(ch, "events", 4, count=6) == everything[4:]
    assert read(ch, "events", -5, count=10) == everything
    assert read(ch, "events", "next", count=1, timeout=0.5) == []
    assert read(ch, "events", 10, count=1, timeout=0.5) == []
    assert read(ch, "events", count=1, timeout=0.5) == []  # "next" is the default


def test_timestamp_and_interval_offsets(ch: BlockingChannel) -> None:
    declare_stream(ch, "stamped")
    publish(ch, "stamped", _bodies(3, "old"))
    time.sleep(1.1)  # AMQP timestamps are whole seconds
    boundary = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    time.sleep(1.1)
    publish(ch, "stamped", _bodies(2, "new"))
    # The old ones are more than 2 s old by now, the new ones much younger.
    assert read(ch, "stamped", "2s", count=5, timeout=1) == [(3, b"new0"), (4, b"new1")]
    assert read(ch, "stamped", boundary, count=5, timeout=1) == [(3, b"new0"), (4, b"new1")]
    future = boundary + datetime.timedelta(hours=1)
    assert read(ch, "stamped", future, count=1, timeout=0.5) == []
    assert [offset for offset, _ in read(ch, "stamped", "1h", count=5)] == [0, 1, 2, 3, 4]


def test_consumers_read_independently_and_follow_the_tail(node: InProcessNode) -> None:
    with pika.BlockingConnection(pika.URLParameters(node.url)) as conn:
        ch = conn.channel()
        ch.confirm_delivery()
        declare_stream(ch, "shared")
        publish(ch, "shared", _bodies(3))
        ch.basic_qos(prefetch_count=50)
        seen: dict[str, list[int]] = {"a": [], "b": [], "tail": []}

        def collect(name: str):
            def on_message(channel, method, properties, body):
                seen[name].append(properties.headers["x-stream-offset"])
                channel.basic_ack(method.delivery_tag)

            return on_message

        ch.basic_consume("shared", collect("a"), arguments={"x-stream-offset": "first"})
        ch.basic_consume("shared", collect("b"), arguments={"x-stream-offset": 1})
        ch.basic_consume("shared", collect("tail"))
        settle_quietly(ch, 0.3)
        publish(ch, "shared", _bodies(200, "late"))
        deadline = time.monotonic() + 10
        while len(seen["a"]) < 203 and time.monotonic() < deadline:
            ch.connection.process_data_events(time_limit=0.05)
        settle_quietly(ch, 0.2)
    assert seen["a"] == list(range(203))
    assert seen["b"] == list(range(1, 203))
    assert seen["tail"] == list(range(3, 203))


def test_prefetch_bounds_unacknowledged_deliveries(ch: BlockingChannel) -> None:
    declare_stream(ch, "bounded")
    publish(ch, "bounded", _bodies(20))
    assert len(read(ch, "bounded", "first", count=20, prefetch=5, ack=False, timeout=1)) == 5
    assert len(read(ch, "bounded", "first", count=20, prefetch=5)) == 20
    # Acks remove nothing: the stream still holds all of them.
    assert ch.queue_declare("bounded", passive=True).method.message_count == 20


def test_management_shows_the_stream(node: InProcessNode, ch: BlockingChannel) -> None:
    declare_stream(ch, "shown", max_age="7D", max_length_bytes=10_000_000)
    publish(ch, "shown", _bodies(4))
    # Two deliveries held unacknowledged: a stream still counts all four as ready.
    ch.basic_qos(prefetch_count=2)
    ch.basic_consume("shown", lambda *_: None, arguments={"x-stream-offset": "first"})
    settle_quietly(ch, 0.3)
    port = node.node.ports["mgmt"]
    request = urllib.request.Request(f"http://127.0.0.1:{port}/api/queues/%2F/shown")
    request.add_header("Authorization", "Basic " + b64encode(b"guest:guest").decode())
    with urllib.request.urlopen(request, timeout=5) as answer:
        shown = json.loads(answer.read())
    assert shown["type"] == "stream"
    assert shown["durable"] is True
    assert shown["consumers"] == 1
    assert (shown["messages"], shown["messages_ready"], shown["messages_unacknowledged"]) == (
        4,
        4,
        0,
    )
    assert shown["arguments"] == {
        "x-queue-type": "stream",
        "x-max-age": "7D",
        "x-max-length-bytes": 10_000_000,
    }
