"""The Spark connector against a real RabbitMQ 3.10.8: the same round trip as against Leveret
(a batch write, a stream from one queue to another acknowledged on commit, a batch read), a
write RabbitMQ nacks, and a RabbitMQ stream queue read by offset (option `stream`), whose query
killed mid-batch re-reads exactly its uncommitted range when restarted from its checkpoint."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.spark.conftest import count, declare, drain, publish
from tests.support.node import wait_for
from tests.support.rabbitmq import RabbitNode

try:
    import pyspark  # noqa: F401 - the spark extra
except ImportError as missing:
    if os.environ.get("CI") == "true":
        raise
    pytest.skip(f"pyspark is not installed: {missing}", allow_module_level=True)

pytestmark = pytest.mark.rabbitmq
STREAM_SECONDS = 60


def test_a_round_trip_through_rabbitmq(spark: Any, rabbitmq: RabbitNode) -> None:
    url = rabbitmq.url
    declare(url, "spark.rmq.in", "spark.rmq.out")
    frame = spark.createDataFrame(
        [(b"w%d" % n, {"n": str(n)}) for n in range(10)], "body binary, headers map<string,string>"
    )
    frame.write.format("leveret").option("uri", url).option("routingKey", "spark.rmq.in").mode(
        "append"
    ).save()
    assert count(url, "spark.rmq.in") == 10
    publish(url, "spark.rmq.in", [b"p%d" % n for n in range(10)])
    with tempfile.TemporaryDirectory() as checkpoint:
        stream = (
            spark.readStream.format("leveret")
            .option("uri", url)
            .option("queue", "spark.rmq.in")
            .option("maxMessages", "6")
            .load()
            .selectExpr("body", "headers", "'spark.rmq.out' as routing_key")
            .writeStream.format("leveret")
            .option("uri", url)
            .option("checkpointLocation", checkpoint)
            .start()
        )
        try:
            wait_for(lambda: count(url, "spark.rmq.out") == 20, STREAM_SECONDS, 0.2)
        finally:
            stream.stop()
    # A batch Spark had not logged as done when the query stopped went back to the queue
    # (at least once): only messages already written may be there.
    leftover = drain(url, "spark.rmq.in")
    read = (
        spark.read.format("leveret").option("uri", url).option("queue", "spark.rmq.out").load()
    ).collect()
    written = [b"w%d" % n for n in range(10)] + [b"p%d" % n for n in range(10)]
    assert sorted(bytes(row.body) for row in read) == sorted(written)
    assert set(leftover) <= set(written) and len(leftover) <= 6
    assert {row.headers["n"] for row in read if row.headers} == {str(n) for n in range(10)}
    assert all(row.queue == "spark.rmq.out" and not row.redelivered for row in read)
    assert count(url, "spark.rmq.out") == 0


def test_a_write_rabbitmq_nacks_fails_the_task(spark: Any, rabbitmq: RabbitNode) -> None:
    url = rabbitmq.url
    declare(url, "spark.rmq.full", arguments={"x-max-length": 2, "x-overflow": "reject-publish"})
    frame = spark.createDataFrame([(b"f%d" % n,) for n in range(5)], "body binary")
    with pytest.raises(Exception, match="the broker nacked message 3 of the task"):
        frame.coalesce(1).write.format("leveret").option("uri", url).option(
            "routingKey", "spark.rmq.full"
        ).mode("append").save()
    assert sorted(drain(url, "spark.rmq.full")) == [b"f0", b"f1"]


Row = tuple[int, bytes]  # x-stream-offset, body


def _stream_rows(frame: Any) -> list[Row]:
    return [(int(row.headers["x-stream-offset"]), bytes(row.body)) for row in frame.collect()]


def _stream_query(spark: Any, url: str, sink: Any, checkpoint: str) -> Any:
    return (
        spark.readStream.format("leveret")
        .option("uri", url)
        .option("queue", "spark.rmq.log")
        .option("stream", "true")
        .option("startingOffsets", "earliest")
        .option("maxMessages", "10")
        .load()
        .writeStream.foreachBatch(sink)
        .option("checkpointLocation", checkpoint)
        .start()
    )


def test_a_rabbitmq_stream_queue_rereads_exactly_its_uncommitted_range(
    spark: Any,
    rabbitmq: RabbitNode,
) -> None:
    """RabbitMQ's offsets are Spark's: the sink keeps each batch by its id, the third batch
    fails after the sink took it, and the query restarted from its checkpoint reads that
    batch's range again (the same messages) and goes on, with what was published meanwhile:
    every message once, in offset order, and nothing consumed from the stream."""
    url = rabbitmq.url
    declare(url, "spark.rmq.log", arguments={"x-queue-type": "stream"})
    publish(url, "spark.rmq.log", [b"s%d" % n for n in range(40)])
    # RabbitMQ counts a stream's messages a moment after they are confirmed; a query started
    # before would see an empty stream and plan an empty first batch.
    wait_for(lambda: count(url, "spark.rmq.log") == 40, STREAM_SECONDS, 0.1)
    sink: dict[int, list[Row]] = {}
    failed: list[Row] = []

    def first_run(frame: Any, batch: int) -> None:
        rows = _stream_rows(frame)
        sink[batch] = rows
        if batch == 2:
            failed.extend(rows)
            raise RuntimeError("the query died in batch 2")

    def second_run(frame: Any, batch: int) -> None:
        sink[batch] = _stream_rows(frame)

    with tempfile.TemporaryDirectory() as checkpoint:
        query = _stream_query(spark, url, first_run, checkpoint)
        try:
            with pytest.raises(Exception, match="the query died in batch 2"):
                query.awaitTermination(STREAM_SECONDS)
        finally:
            query.stop()
        planned = json.loads((Path(checkpoint) / "offsets" / "2").read_text().splitlines()[-1])
        publish(url, "spark.rmq.log", [b"s%d" % n for n in range(40, 55)])
        query = _stream_query(spark, url, second_run, checkpoint)
        try:
            wait_for(lambda: sum(map(len, sink.values())) >= 55, STREAM_SECONDS, 0.2)
        finally:
            query.stop()
    assert sink[0] == [(n, b"s%d" % n) for n in range(10)]  # offsets from the first, 0
    assert planned == {"spark.rmq.log": 30}
    assert failed == [(n, b"s%d" % n) for n in range(20, 30)]
    assert sink[2] == failed  # the same range, the same messages
    assert [row for batch in sorted(sink) for row in sink[batch]] == [
        (n, b"s%d" % n) for n in range(55)
    ]
    # Read, not consumed: the stream keeps all 55 (as counted, a moment late, by RabbitMQ).
    wait_for(lambda: count(url, "spark.rmq.log") == 55, STREAM_SECONDS, 0.1)
