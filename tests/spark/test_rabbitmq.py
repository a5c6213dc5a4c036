"""The Spark connector against a real RabbitMQ 3.10.8: the same round trip as against Leveret
(a batch write, a stream from one queue to another acknowledged on commit, a batch read), and
a write RabbitMQ nacks."""

from __future__ import annotations

import os
import tempfile
from typing import Any

import pytest

from tests.spark.conftest import count, declare, drain, publish
from tests.support.node import wait_for
from tests.support.rabbitmq import RabbitNode, rabbitmq  # noqa: F401 - fixture

try:
    import pyspark  # noqa: F401 - the spark extra
except ImportError as missing:
    if os.environ.get("CI") == "true":
        raise
    pytest.skip(f"pyspark is not installed: {missing}", allow_module_level=True)

pytestmark = pytest.mark.rabbitmq
STREAM_SECONDS = 60


def test_a_round_trip_through_rabbitmq(spark: Any, rabbitmq: RabbitNode) -> None:  # noqa: F811
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


def test_a_write_rabbitmq_nacks_fails_the_task(spark: Any, rabbitmq: RabbitNode) -> None:  # noqa: F811
    url = rabbitmq.url
    declare(url, "spark.rmq.full", arguments={"x-max-length": 2, "x-overflow": "reject-publish"})
    frame = spark.createDataFrame([(b"f%d" % n,) for n in range(5)], "body binary")
    with pytest.raises(Exception, match="the broker nacked message 3 of the task"):
        frame.coalesce(1).write.format("leveret").option("uri", url).option(
            "routingKey", "spark.rmq.full"
        ).mode("append").save()
    assert sorted(drain(url, "spark.rmq.full")) == [b"f0", b"f1"]
