"""The Spark connector against a real node, through a local SparkSession (PySpark 4, Java 17):
batch writes and reads, streams from one or several queues, acknowledgement on commit (and
every message again after a query dies mid-batch), a nacked write, and the errors that name
the option or column at fault."""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import socket
import tempfile
import urllib.request
from collections.abc import Iterator
from typing import Any

import pika
import pytest

from tests.spark.conftest import count, declare, drain, publish, unacked
from tests.support.node import NodeProcess, wait_for

try:
    from leveret.spark.batch_server import FetchError, fetch
    from leveret.spark.options import source_options
    from leveret.spark.source import StreamReader
except ImportError as missing:  # pyspark is the spark extra
    if os.environ.get("CI") == "true":
        raise
    pytest.skip(f"pyspark is not installed: {missing}", allow_module_level=True)

STREAM_SECONDS = 60  # the most any stream here waits for its messages


@pytest.fixture(scope="module")
def node() -> Iterator[NodeProcess]:
    running = NodeProcess().start()
    try:
        yield running
    finally:
        running.cleanup()


def test_a_batch_written_then_read_back(spark: Any, node: NodeProcess) -> None:
    declare(node.url, "spark.batch")
    rows = [(f"m{n}".encode(), "spark.batch", {"n": str(n)}) for n in range(5)]
    frame = spark.createDataFrame(
        rows, "body binary, routing_key string, headers map<string,string>"
    )
    frame.write.format("leveret").option("uri", node.url).mode("append").save()
    assert count(node.url, "spark.batch") == 5
    # A peek leaves the messages queued; a read acknowledges them.
    peek = spark.read.format("leveret").option("uri", node.url).option("queue", "spark.batch")
    assert peek.option("ack", "false").load().count() == 5
    assert count(node.url, "spark.batch") == 5
    read = (
        spark.read.format("leveret").option("uri", node.url).option("queue", "spark.batch").load()
    ).collect()
    assert sorted(bytes(row.body) for row in read) == [f"m{n}".encode() for n in range(5)]
    assert {row.headers["n"] for row in read} == {str(n) for n in range(5)}
    assert all(row.queue == "spark.batch" and row.delivery_mode == 2 for row in read)
    assert all(row.redelivered for row in read)  # the peek gave them back
    assert count(node.url, "spark.batch") == 0


def test_a_batch_read_takes_at_most_max_messages(spark: Any, node: NodeProcess) -> None:
    declare(node.url, "spark.limited")
    publish(node.url, "spark.limited", [b"x%d" % n for n in range(30)])
    read = (
        spark.read.format("leveret")
        .option("uri", node.url)
        .option("queue", "spark.limited")
        .option("maxMessages", "12")
        .load()
    )
    assert [bytes(row.body) for row in read.collect()] == [b"x%d" % n for n in range(12)]
    assert count(node.url, "spark.limited") == 18
    drain(node.url, "spark.limited")


def test_a_stream_from_one_queue_to_another(spark: Any, node: NodeProcess) -> None:
    declare(node.url, "spark.in", "spark.out")
    with pika.BlockingConnection(pika.URLParameters(node.url)) as conn:
        channel = conn.channel()
        properties = pika.BasicProperties(
            content_type="text/plain", headers={"kind": "click"}, timestamp=1_700_000_000
        )
        for n in range(20):
            channel.basic_publish("", "spark.in", f"e{n}".encode(), properties)
    with tempfile.TemporaryDirectory() as checkpoint:
        stream = (
            spark.readStream.format("leveret")
            .option("uri", node.url)
            .option("queue", "spark.in")
            .option("maxMessages", "8")
            .load()
            .selectExpr(
                "upper(cast(body as string)) as body",
                "map('kind', headers['kind'], 'type', content_type,"
                " 'at', cast(unix_timestamp(timestamp) as string)) as headers",
            )
            .writeStream.format("leveret")
            .option("uri", node.url)
            .option("routingKey", "spark.out")
            .option("checkpointLocation", checkpoint)
            .start()
        )
        try:
            wait_for(lambda: count(node.url, "spark.out") == 20, STREAM_SECONDS, 0.2)
            # Once Spark committed the batches, their messages are acknowledged at the source.
            wait_for(
                lambda: (
                    count(node.url, "spark.in") == 0
                    and unacked(node.management_url, "spark.in") == 0
                ),
                30,
                0.2,
            )
        finally:
            stream.stop()
    with pika.BlockingConnection(pika.URLParameters(node.url)) as conn:
        channel = conn.channel()
        got = [channel.basic_get("spark.out", auto_ack=True) for _ in range(20)]
    assert sorted(body for _, _, body in got) == sorted(f"E{n}".encode() for n in range(20))
    assert {tuple(sorted(props.headers.items())) for _, props, _ in got} == {
        (("at", "1700000000"), ("kind", "click"), ("type", "text/plain"))
    }


def test_a_stream_reads_several_queues_as_a_low_priority_consumer(
    spark: Any, node: NodeProcess
) -> None:
    declare(node.url, "spark.a", "spark.b")
    publish(node.url, "spark.a", [b"a%d" % n for n in range(15)])
    publish(node.url, "spark.b", [b"b%d" % n for n in range(15)])
    seen: list[tuple[str, bytes]] = []
    with tempfile.TemporaryDirectory() as checkpoint:
        stream = (
            spark.readStream.format("leveret")
            .option("uri", node.url)
            .option("queue", "spark.a, spark.b")
            .option("x-priority", "-5")
            .option("maxMessages", "7")
            .load()
            .writeStream.foreachBatch(
                lambda frame, _batch: seen.extend(
                    (row.queue, bytes(row.body)) for row in frame.collect()
                )
            )
            .option("checkpointLocation", checkpoint)
            .start()
        )
        try:
            wait_for(lambda: len(seen) >= 30, STREAM_SECONDS, 0.2)
            consumers = _consumers(node)
        finally:
            stream.stop()
    assert sorted(seen) == sorted(
        [("spark.a", b"a%d" % n) for n in range(15)] + [("spark.b", b"b%d" % n) for n in range(15)]
    )
    # Each queue in its arrival order.
    assert [body for queue, body in seen if queue == "spark.a"] == [b"a%d" % n for n in range(15)]
    assert {(c["queue"]["name"], c["arguments"].get("x-priority")) for c in consumers} == {
        ("spark.a", -5),
        ("spark.b", -5),
    }


def _consumers(node: NodeProcess) -> list[dict[str, Any]]:
    request = urllib.request.Request(
        f"{node.management_url}/api/consumers",
        headers={"Authorization": "Basic Z3Vlc3Q6Z3Vlc3Q="},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        found: list[dict[str, Any]] = json.loads(response.read())
    return [c for c in found if c["queue"]["name"].startswith("spark.")]


def test_a_query_that_dies_mid_batch_gets_every_message_on_restart(
    spark: Any, node: NodeProcess
) -> None:
    """The second micro-batch fails after it was read: the query dies before Spark commits it.
    Restarted from its checkpoint, the query gets every message of that batch again, marked
    redelivered, and none is lost."""
    declare(node.url, "spark.restart")
    bodies = [b"r%d" % n for n in range(40)]
    publish(node.url, "spark.restart", bodies)
    kept: list[tuple[bytes, bool]] = []
    failed: list[bytes] = []

    def first_run(frame: Any, batch: int) -> None:
        rows = [(bytes(row.body), row.redelivered) for row in frame.collect()]
        if len(kept) >= 10:
            failed.extend(body for body, _ in rows)
            raise RuntimeError("the sink of batch 2 failed")
        kept.extend(rows)

    def second_run(frame: Any, batch: int) -> None:
        kept.extend((bytes(row.body), row.redelivered) for row in frame.collect())

    with tempfile.TemporaryDirectory() as checkpoint:
        for run in (first_run, second_run):
            query = (
                spark.readStream.format("leveret")
                .option("uri", node.url)
                .option("queue", "spark.restart")
                .option("maxMessages", "10")
                .load()
                .writeStream.foreachBatch(run)
                .option("checkpointLocation", checkpoint)
                .start()
            )
            try:
                if run is first_run:
                    with pytest.raises(Exception, match="the sink of batch 2 failed"):
                        query.awaitTermination(STREAM_SECONDS)
                else:
                    wait_for(lambda: len(kept) >= len(bodies), STREAM_SECONDS, 0.2)
                    # Acknowledged once Spark has logged the last batch as done.
                    wait_for(lambda: unacked(node.management_url, "spark.restart") == 0, 30, 0.1)
            finally:
                query.stop()
    assert failed, "the first run failed no batch"
    assert sorted(body for body, _ in kept) == sorted(bodies)
    redelivered = {body for body, again in kept if again}
    # The failed batch came back redelivered (with what the first run had prefetched), and
    # the batch committed before it did not.
    assert set(failed) <= redelivered and not redelivered & {body for body, _ in kept[:10]}
    assert count(node.url, "spark.restart") == 0


def _rows(reader: StreamReader, start: dict[str, int], end: dict[str, int]) -> list[Any]:
    """What Spark's executors would get for the batch from `start` to `end`."""
    return [
        row
        for partition in reader.partitions(start, end)
        for batch in reader.read(partition)
        for row in batch.to_pylist()
    ]


def test_an_uncommitted_micro_batch_comes_back_redelivered(node: NodeProcess) -> None:
    """A reader that stops between reading a batch and its commit leaves the batch to the
    broker, which gives it again, marked redelivered, to the next reader."""
    declare(node.url, "spark.atleastonce")
    publish(node.url, "spark.atleastonce", [b"a", b"b", b"c"])
    options = source_options({"uri": node.url, "queue": "spark.atleastonce"})
    first = StreamReader(options)
    start = first.initialOffset()
    end = first.latestOffset(start, None)
    assert end == {"batch": 1}
    assert [row["body"] for row in _rows(first, start, end)] == [b"a", b"b", b"c"]
    first.stop()  # killed before Spark's commit
    second = StreamReader(options)
    assert _rows(second, start, end) == []  # the planned batch, replayed, reads nothing
    after = second.latestOffset(end, None)
    assert after == {"batch": 2}
    assert [(row["body"], row["redelivered"]) for row in _rows(second, end, after)] == [
        (b"a", True),
        (b"b", True),
        (b"c", True),
    ]
    assert unacked(node.management_url, "spark.atleastonce") == 3
    second.commit(after)
    wait_for(lambda: unacked(node.management_url, "spark.atleastonce") == 0, 10, 0.05)
    second.stop()
    assert count(node.url, "spark.atleastonce") == 0


def test_executors_fetch_a_planned_batch_until_it_is_committed(node: NodeProcess) -> None:
    """A micro-batch's partitions name its data on the driver, not carry it: a retried task
    reads the same rows again until the commit, after which (or with a wrong token) the
    driver's reader refuses it, and stop() closes the reader's port."""
    declare(node.url, "spark.fetch")
    bodies = [b"m%d" % i for i in range(3000)]
    publish(node.url, "spark.fetch", bodies)
    options = source_options({"uri": node.url, "queue": "spark.fetch", "maxMessages": "3000"})
    reader = StreamReader(options)
    start = reader.initialOffset()
    end = reader.latestOffset(start, None)
    parts = reader.partitions(start, end)
    assert parts
    assert all(len(pickle.dumps(part)) < 1024 for part in parts)  # no rows in Spark's tasks
    first = _rows(reader, start, end)
    assert first
    assert [row["body"] for row in first] == bodies[: len(first)]
    assert _rows(reader, start, end) == first  # a task retried before the commit
    forged = dataclasses.replace(parts[0].ref, token=bytes(16))
    with pytest.raises(FetchError, match="micro-batch 1 is not held"):
        fetch(forged)
    reader.commit(end)
    with pytest.raises(FetchError, match="micro-batch 1 is not held"):
        list(reader.read(parts[0]))
    wait_for(lambda: unacked(node.management_url, "spark.fetch") == 0, 10, 0.05)
    reader.stop()
    with pytest.raises(FetchError, match="could not fetch micro-batch 1"):
        fetch(parts[0].ref)
    wait_for(lambda: count(node.url, "spark.fetch") == len(bodies) - len(first), 10, 0.05)


def test_a_nacked_write_fails_the_task(spark: Any, node: NodeProcess) -> None:
    """A queue full with reject-publish nacks what does not fit: the write fails, naming it."""
    declare(node.url, "spark.full", arguments={"x-max-length": 3, "x-overflow": "reject-publish"})
    frame = spark.createDataFrame([(b"f%d" % n,) for n in range(10)], "body binary")
    with pytest.raises(Exception, match="the broker nacked message 4 of the task"):
        frame.coalesce(1).write.format("leveret").option("uri", node.url).option(
            "routingKey", "spark.full"
        ).mode("append").save()
    assert count(node.url, "spark.full") == 3


def test_an_unroutable_write_fails_the_task(spark: Any, node: NodeProcess) -> None:
    frame = spark.createDataFrame([(b"lost",)], "body binary")
    with pytest.raises(Exception, match="a message was returned: 312 NO_ROUTE"):
        frame.write.format("leveret").option("uri", node.url).option(
            "routingKey", "spark.nowhere"
        ).mode("append").save()


def test_errors_name_the_option_or_column(spark: Any, node: NodeProcess) -> None:
    reader = spark.read.format("leveret").option("uri", node.url)
    with pytest.raises(Exception, match="option 'queue' is required"):
        reader.load().collect()
    with pytest.raises(Exception, match="option 'queue': NOT_FOUND - no queue 'missing'"):
        reader.option("queue", "missing").load().collect()
    with pytest.raises(Exception, match="option 'prefetch' must be at most 65535"):
        reader.option("queue", "x").option("prefetch", "70000").load().collect()
    wrong = node.url.replace("guest:guest", "guest:wrong")
    with pytest.raises(Exception, match="refused the credentials of option 'uri'"):
        spark.read.format("leveret").option("uri", wrong).option("queue", "x").load().collect()
    with socket_closed() as port:
        unreachable = f"amqp://guest:guest@127.0.0.1:{port}/"
        with pytest.raises(Exception, match="cannot connect to the broker of option 'uri'"):
            spark.read.format("leveret").option("uri", unreachable).option(
                "queue", "x"
            ).load().collect()
    declare(node.url, "spark.nobody")
    frame = spark.createDataFrame([(None, "spark.nobody")], "body binary, routing_key string")
    with pytest.raises(Exception, match="the column 'body' is required"):
        frame.write.format("leveret").option("uri", node.url).mode("append").save()
    assert count(node.url, "spark.nobody") == 0


def test_a_stream_from_a_missing_queue_fails_naming_it(spark: Any, node: NodeProcess) -> None:
    with tempfile.TemporaryDirectory() as checkpoint:
        query = (
            spark.readStream.format("leveret")
            .option("uri", node.url)
            .option("queue", "spark.absent")
            .load()
            .writeStream.format("noop")
            .option("checkpointLocation", checkpoint)
            .start()
        )
        try:
            with pytest.raises(Exception, match="option 'queue': NOT_FOUND - no queue"):
                query.awaitTermination(STREAM_SECONDS)
        finally:
            query.stop()


class socket_closed:
    """A loopback port nothing listens on (bound, never listening, so no one else takes it)."""

    def __enter__(self) -> int:
        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        return int(self._socket.getsockname()[1])

    def __exit__(self, *exc: object) -> None:
        self._socket.close()
