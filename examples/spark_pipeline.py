"""A streaming pipeline on Spark: read the queue `events`, count events per kind over 10-second
windows, and write each window's counts as JSON to the queue `event-counts`.

`make spark-example` runs it end to end on this machine: it starts a Leveret node of its own,
publishes a few hundred events, lets the query run until the counts stop coming (at most
180 s), prints them, and stops. Point `--uri` at your own broker to run the pipeline alone (it
then runs until Ctrl-C).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time

import pika
from pyspark.sql import SparkSession
from pyspark.sql.functions import window
from pyspark.sql.streaming import StreamingQuery

from leveret.spark import register
from leveret.testing import LeveretProcess

KINDS = ("click", "view", "purchase")


def pipeline(spark: SparkSession, uri: str, checkpoint: str) -> StreamingQuery:
    events = (
        spark.readStream.format("leveret")
        .option("uri", uri)
        .option("queue", "events")
        .option("maxMessages", "5000")
        .load()
    )
    counts = (
        events.selectExpr(
            "headers['kind'] as kind", "coalesce(timestamp, current_timestamp()) as at"
        )
        .withWatermark("at", "10 seconds")
        .groupBy("kind", window("at", "10 seconds"))
        .count()
        .selectExpr(
            "to_json(named_struct('kind', kind, 'start', window.start, 'count', count)) as body",
            "'event-counts' as routing_key",
        )
    )
    return (
        counts.writeStream.format("leveret")
        .option("uri", uri)
        .option("checkpointLocation", checkpoint)
        .outputMode("append")
        .start()
    )


def publish_events(uri: str, count: int) -> None:
    """`count` events of random kinds, stamped 40 to 20 s ago."""
    with pika.BlockingConnection(pika.URLParameters(uri)) as connection:
        channel = connection.channel()
        channel.confirm_delivery()
        for queue in ("events", "event-counts"):
            channel.queue_declare(queue, durable=True)
        now = int(time.time()) - 40
        for number in range(count):
            properties = pika.BasicProperties(
                delivery_mode=2,
                timestamp=now + number % 20,
                headers={"kind": random.choice(KINDS)},
            )
            channel.basic_publish("", "events", json.dumps({"n": number}).encode(), properties)
        # One event of now moves the watermark past those windows, so that Spark writes them.
        tick = pika.BasicProperties(
            delivery_mode=2, timestamp=int(time.time()), headers={"kind": "tick"}
        )
        channel.basic_publish("", "events", b"{}", tick)


def wait_for_counts(uri: str, seconds: float) -> None:
    """Until the counts stop coming (none new for 5 s once some came), or `seconds` passed: a
    busy machine may take a while over the first micro-batches."""
    deadline = time.monotonic() + seconds
    seen, since = 0, time.monotonic()
    with pika.BlockingConnection(pika.URLParameters(uri)) as connection:
        channel = connection.channel()
        while time.monotonic() < deadline:
            ready = channel.queue_declare("event-counts", passive=True).method.message_count
            if ready != seen:
                seen, since = ready, time.monotonic()
            elif seen and time.monotonic() - since > 5:
                return
            connection.sleep(0.5)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--uri", help="a broker to use (default: start a node here)")
    parser.add_argument("--seconds", type=float, default=180, help="at most, on a node of its own")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    node = None if args.uri else LeveretProcess().start()
    uri = args.uri or node.url  # type: ignore[union-attr]
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("leveret-example")
        .config("spark.sql.shuffle.partitions", "2")  # a small machine: not 200 tasks per batch
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    try:
        publish_events(uri, 300)
        with tempfile.TemporaryDirectory() as checkpoint:
            query = pipeline(spark, uri, checkpoint)
            if node is None:
                query.awaitTermination()
            else:
                wait_for_counts(uri, args.seconds)
            query.stop()
        with pika.BlockingConnection(pika.URLParameters(uri)) as connection:
            channel = connection.channel()
            while True:
                _, _, body = channel.basic_get("event-counts", auto_ack=True)
                if body is None:
                    break
                print(body.decode())
    finally:
        spark.stop()
        if node is not None:
            node.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
