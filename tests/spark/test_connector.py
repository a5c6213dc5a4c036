"""The Spark connector against a real node, through a local SparkSession (PySpark 4, Java 17):
batch writes and reads, a stream from one queue to another, acknowledgement on commit, and the
errors that name the option or column at fault."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pika
import pytest

from tests.support.node import NodeProcess, wait_for

try:
    from pyspark.sql import SparkSession

    from leveret.spark import register
    from leveret.spark.options import source_options
    from leveret.spark.source import StreamReader
except ImportError as missing:  # pyspark is the spark extra
    if os.environ.get("CI") == "true":
        raise
    pytest.skip(f"pyspark is not installed: {missing}", allow_module_level=True)


@pytest.fixture(scope="module")
def node() -> Iterator[NodeProcess]:
    running = NodeProcess().start()
    try:
        yield running
    finally:
        running.cleanup()


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    # Spark's Python workers run this interpreter (with pika and Leveret), not the system's.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[1]")
        .appName("leveret-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .getOrCreate()
    )
    register(session)
    try:
        yield session
    finally:
        session.stop()


def declare(node: NodeProcess, *queues: str) -> None:
    with pika.BlockingConnection(pika.URLParameters(node.url)) as conn:
        channel = conn.channel()
        for queue in queues:
            channel.queue_declare(queue, durable=True)


def count(node: NodeProcess, queue: str) -> int:
    with pika.BlockingConnection(pika.URLParameters(node.url)) as conn:
        return conn.channel().queue_declare(queue, passive=True).method.message_count


def publish(node: NodeProcess, queue: str, bodies: list[bytes]) -> None:
    with pika.BlockingConnection(pika.URLParameters(node.url)) as conn:
        channel = conn.channel()
        channel.confirm_delivery()
        for body in bodies:
            channel.basic_publish("", queue, body, pika.BasicProperties(delivery_mode=2))


def test_a_batch_written_then_read_back(spark: Any, node: NodeProcess) -> None:
    declare(node, "spark.batch")
    rows = [(f"m{n}".encode(), "spark.batch", {"n": str(n)}) for n in range(5)]
    frame = spark.createDataFrame(
        rows, "body binary, routing_key string, headers map<string,string>"
    )
    frame.write.format("leveret").option("uri", node.url).mode("append").save()
    assert count(node, "spark.batch") == 5
    # A peek leaves the messages queued; a read acknowledges them.
    peek = spark.read.format("leveret").option("uri", node.url).option("queue", "spark.batch")
    assert peek.option("ack", "false").load().count() == 5
    assert count(node, "spark.batch") == 5
    read = (
        spark.read.format("leveret").option("uri", node.url).option("queue", "spark.batch").load()
    ).collect()
    assert sorted(bytes(row.body) for row in read) == [f"m{n}".encode() for n in range(5)]
    assert {row.headers["n"] for row in read} == {str(n) for n in range(5)}
    assert all(row.queue == "spark.batch" and row.delivery_mode == 2 for row in read)
    assert count(node, "spark.batch") == 0


def test_a_stream_from_one_queue_to_another(spark: Any, node: NodeProcess) -> None:
    declare(node, "spark.in", "spark.out")
    publish(node, "spark.in", [f"e{n}".encode() for n in range(20)])
    with tempfile.TemporaryDirectory() as checkpoint:
        stream = (
            spark.readStream.format("leveret")
            .option("uri", node.url)
            .option("queue", "spark.in")
            .option("maxMessages", "8")
            .load()
            .selectExpr("upper(cast(body as string)) as body")
            .writeStream.format("leveret")
            .option("uri", node.url)
            .option("routingKey", "spark.out")
            .option("checkpointLocation", checkpoint)
            .start()
        )
        try:
            wait_for(lambda: count(node, "spark.out") == 20, 90, 0.5)
            # Once Spark committed the batches, their messages are acknowledged at the source.
            wait_for(
                lambda: count(node, "spark.in") == 0 and _unacked(node, "spark.in") == 0, 30, 0.5
            )
        finally:
            stream.stop()
    with pika.BlockingConnection(pika.URLParameters(node.url)) as conn:
        channel = conn.channel()
        bodies = [channel.basic_get("spark.out", auto_ack=True)[2] for _ in range(20)]
    assert sorted(bodies) == sorted(f"E{n}".encode() for n in range(20))


def _unacked(node: NodeProcess, queue: str) -> int:
    request = urllib.request.Request(
        f"{node.management_url}/api/queues/%2F/{queue}",
        headers={"Authorization": "Basic Z3Vlc3Q6Z3Vlc3Q="},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return int(json.loads(response.read()).get("messages_unacknowledged", 0))


def test_an_uncommitted_micro_batch_comes_back_redelivered(node: NodeProcess) -> None:
    """A query that dies between reading a batch and committing it (the reader stops without
    a commit) leaves its messages to the broker, which gives them again, marked redelivered."""
    declare(node, "spark.atleastonce")
    publish(node, "spark.atleastonce", [b"a", b"b", b"c"])
    options = source_options({"uri": node.url, "queue": "spark.atleastonce"})
    first = StreamReader(options)
    rows, end = first.read(first.initialOffset())
    assert [row[0] for row in rows] == [b"a", b"b", b"c"] and end == {"batch": 1}
    first.stop()  # killed before Spark's commit
    second = StreamReader(options)
    again, end = second.read({"batch": 1})
    again = list(again)
    assert [(row[0], row[3]) for row in again] == [(b"a", True), (b"b", True), (b"c", True)]
    second.commit(end)
    second.stop()
    time.sleep(0.2)
    assert count(node, "spark.atleastonce") == 0


def test_errors_name_the_option_or_column(spark: Any, node: NodeProcess) -> None:
    reader = spark.read.format("leveret").option("uri", node.url)
    with pytest.raises(Exception, match="option 'queue' is required"):
        reader.load().collect()
    with pytest.raises(Exception, match="option 'queue': NOT_FOUND - no queue 'missing'"):
        reader.option("queue", "missing").load().collect()
    wrong = node.url.replace("guest:guest", "guest:wrong")
    with pytest.raises(Exception, match="refused the credentials of option 'uri'"):
        spark.read.format("leveret").option("uri", wrong).option("queue", "x").load().collect()
    declare(node, "spark.nobody")
    frame = spark.createDataFrame([(None, "spark.nobody")], "body binary, routing_key string")
    with pytest.raises(Exception, match="the column 'body' is required"):
        frame.write.format("leveret").option("uri", node.url).mode("append").save()
