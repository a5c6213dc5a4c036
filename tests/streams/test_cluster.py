"""A stream homed on node A of a 3-node cluster, used through B and C: publishes are appended on
A, consumers run there with their x-stream-offset, and the refusals come back as on one node."""

from __future__ import annotations

import datetime
import time
import urllib.error
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pika
import pika.exceptions
import pytest

from tests.cluster.processes import Cluster, queue_visible, running_cluster
from tests.streams.support import STREAM, publish, read
from tests.support.node import wait_for

A, B, C = 0, 1, 2


@pytest.fixture(scope="module")
def three() -> Iterator[Cluster]:
    with running_cluster(3) as cluster:
        yield cluster


def url(cluster: Cluster, index: int) -> str:
    process = cluster.nodes[index].process
    assert process is not None
    return process.url


def connect(cluster: Cluster, index: int) -> pika.BlockingConnection:
    return pika.BlockingConnection(pika.URLParameters(url(cluster, index)))


def declare_stream_on(cluster: Cluster, index: int, name: str, **arguments: Any) -> None:
    with connect(cluster, index) as conn:
        ch = conn.channel()
        ch.queue_delete(name)
        ch.queue_declare(name, durable=True, arguments={**STREAM, **arguments})
    for other in range(len(cluster.nodes)):
        if other != index:
            wait_for(lambda other=other: queue_visible(url(cluster, other), name), 10, 0.02)


def test_publish_through_b_and_replay_through_c(three: Cluster) -> None:
    declare_stream_on(three, A, "x-events")
    with connect(three, B) as conn:
        ch = conn.channel()
        ch.confirm_delivery()
        publish(ch, "x-events", [f"e{i}".encode() for i in range(300)])
        assert ch.queue_declare("x-events", passive=True).method.message_count == 300
    everything = [(i, f"e{i}".encode()) for i in range(300)]
    with connect(three, C) as conn:
        ch = conn.channel()
        assert read(ch, "x-events", "first", count=300, prefetch=50) == everything
        assert read(ch, "x-events", 250, count=50) == everything[250:]
        assert read(ch, "x-events", "last", count=1) == everything[-1:]
        assert read(ch, "x-events", "1h", count=300, prefetch=1000) == everything
        stamp = datetime.datetime.now(datetime.UTC) + datetime.timedelta(hours=1)
        assert read(ch, "x-events", stamp, count=1, timeout=0.5) == []
    with connect(three, A) as conn:
        assert read(conn.channel(), "x-events", 299, count=1) == everything[-1:]


def test_a_remote_consumer_follows_the_tail(three: Cluster) -> None:
    declare_stream_on(three, A, "x-tail")
    with connect(three, C) as consumer_conn, connect(three, B) as publisher_conn:
        consumer = consumer_conn.channel()
        consumer.basic_qos(prefetch_count=20)
        got: list[int] = []

        def on_message(channel: Any, method: Any, properties: Any, body: bytes) -> None:
            got.append(properties.headers["x-stream-offset"])
            channel.basic_ack(method.delivery_tag)

        consumer.basic_consume("x-tail", on_message)  # "next": only what comes after it
        consumer_conn.process_data_events(time_limit=0.3)
        publisher = publisher_conn.channel()
        publisher.confirm_delivery()
        publish(publisher, "x-tail", [b"t"] * 500)
        deadline = time.monotonic() + 15
        while len(got) < 500 and time.monotonic() < deadline:
            consumer_conn.process_data_events(time_limit=0.05)
    assert got == list(range(500))


def test_refusals_through_another_node(three: Cluster) -> None:
    declare_stream_on(three, A, "x-refusals")
    with connect(three, B) as conn:
        ch = conn.channel()
        ch.confirm_delivery()
        publish(ch, "x-refusals", [b"one"])
    resource = "queue 'x-refusals' in vhost '/'"
    with connect(three, B) as conn, pytest.raises(pika.exceptions.ChannelClosedByBroker) as closed:
        conn.channel().basic_consume("x-refusals", lambda *_: None)
    assert (closed.value.reply_code, closed.value.reply_text) == (
        406,
        f"PRECONDITION_FAILED - consumer prefetch count is not set for '{resource}'",
    )
    for action, text in [
        (lambda ch: ch.basic_get("x-refusals"), "basic.get"),
        (lambda ch: ch.queue_purge("x-refusals"), "queue.purge"),
    ]:
        conn = connect(three, C)
        with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as hard:
            action(conn.channel())
        assert (hard.value.reply_code, hard.value.reply_text) == (
            540,
            f"NOT_IMPLEMENTED - {text} not supported by stream queues {resource}",
        )
    conn = connect(three, C)
    ch = conn.channel()
    ch.basic_qos(prefetch_count=5)
    tags: list[int] = []
    ch.basic_consume(
        "x-refusals",
        lambda _c, method, _p, _b: tags.append(method.delivery_tag),
        arguments={"x-stream-offset": "first"},
    )
    wait_for(lambda: conn.process_data_events(time_limit=0.05) or tags, 10, 0)
    with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as hard:
        ch.basic_nack(tags[0])
        conn.process_data_events(time_limit=2)
    assert hard.value.reply_code == 540


def test_management_on_another_node_shows_the_stream(three: Cluster) -> None:
    declare_stream_on(three, A, "x-shown", **{"x-max-age": "1D"})
    with connect(three, B) as conn:
        ch = conn.channel()
        ch.confirm_delivery()
        publish(ch, "x-shown", [b"a", b"b"])
    path = f"/api/queues/%2F/{urllib.parse.quote('x-shown', safe='')}"
    for index in (A, C):
        shown = three.nodes[index].http("GET", path)
        assert shown["type"] == "stream"
        assert shown["arguments"] == {"x-queue-type": "stream", "x-max-age": "1D"}
        assert shown["messages"] == 2
    with pytest.raises(urllib.error.HTTPError) as refused:
        three.nodes[C].http("DELETE", path + "/contents")
    assert refused.value.code == 400
