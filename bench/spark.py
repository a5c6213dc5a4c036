"""Messages/s into and out of Spark: the connector (the format "leveret") beside what users
write by hand today, pika inside foreachBatch.

One local SparkSession (local[2], unpinned) and one broker at a time, pinned to core 0: a
Leveret node, then RabbitMQ 3.10.8. For 100 B and 1 KiB persistent messages in a durable queue:

- into Spark: the queue preloaded, then a stream from it to Spark's `noop` sink: the connector
  (maxMessages 30000, prefetch 60000), or a rate-triggered foreachBatch that drains up to the
  same number of messages with pika (basic.consume, the same prefetch), makes a DataFrame of
  them (body, routing key, exchange, redelivered, headers), writes it to `noop` and then
  acknowledges them (multiple). Counted from the end of the first batch (warm-up) to the end
  of the last.
- into Spark from a stream queue: the messages preloaded into a stream queue, then the
  connector's stream source (option stream, startingOffsets earliest, maxMessages 100000),
  which reads offset ranges on the executors, to `noop`; timed as above.
- out of Spark: a DataFrame of that many rows written as messages with publisher confirms:
  the connector's batch write, or foreachPartition with pika's confirm_delivery.

    .venv/bin/python -m bench.spark --write        # make bench-spark
    .venv/bin/python -m bench.spark --classic-read 1024   # one row: a queue into Spark, with CPU
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pika
from pyspark.sql import SparkSession

from bench.brokers import running_leveret, running_rabbitmq
from bench.procinfo import cpu_seconds, process_group_pids
from bench.sections import marks, write_section
from leveret.amqp.properties import BasicProperties, encode_header_payload
from leveret.spark import register
from leveret.spark.publisher import publish

SECTION = "spark.py"
START_MARK, END_MARK = marks(SECTION)
SIZES = (100, 1024)
QUEUE = "bench.spark"
STREAM_QUEUE = "bench.spark.stream"
BATCH = 30_000  # messages per micro-batch at most
PREFETCH = 60_000  # room for the batch in progress and the next
# A stream queue's batches are offset ranges that no prefetch bounds: larger batches spread
# Spark's fixed cost per micro-batch (about 150 ms here) over more messages.
STREAM_BATCH = 100_000
GOAL = 50_000


@dataclass(frozen=True)
class Figure:
    messages: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.messages / self.seconds if self.seconds > 0 else 0.0


def _session() -> Any:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[2]")
        .appName("leveret-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    return session


def _reset(url: str) -> None:
    with pika.BlockingConnection(pika.URLParameters(url)) as connection:
        channel = connection.channel()
        channel.queue_delete(QUEUE)
        channel.queue_declare(QUEUE, durable=True)


def _preload(url: str, messages: int, size: int, queue: str = QUEUE) -> None:
    if queue == QUEUE:
        _reset(url)
    else:
        with pika.BlockingConnection(pika.URLParameters(url)) as connection:
            channel = connection.channel()
            channel.queue_delete(queue)
            channel.queue_declare(queue, durable=True, arguments={"x-queue-type": "stream"})
    header = encode_header_payload(60, size, BasicProperties(delivery_mode=2).encode())
    body = b"x" * size
    publish([url], (("", queue, header, body) for _ in range(messages)), "leveret-bench-preload")


def _wait(done: Callable[[], bool], cap: float) -> None:
    deadline = time.monotonic() + cap
    while not done() and time.monotonic() < deadline:
        time.sleep(0.1)


def _from_first_batch(ends: list[tuple[float, int]]) -> Figure:
    """Messages after the first batch, over the time from its end to the last batch's end."""
    if len(ends) < 2:
        return Figure(0, 0.0)
    return Figure(sum(n for _, n in ends[1:]), ends[-1][0] - ends[0][0])


def into_spark_connector(
    spark: Any, url: str, messages: int, cap: float, stream: bool = False
) -> Figure:
    """A queue read by the connector; with `stream`, a stream queue read by offset ranges."""
    options = {"queue": QUEUE, "prefetch": str(PREFETCH), "maxMessages": str(BATCH)}
    if stream:
        options = {
            "queue": STREAM_QUEUE,
            "stream": "true",
            "startingOffsets": "earliest",
            "maxMessages": str(STREAM_BATCH),
        }
    with tempfile.TemporaryDirectory() as checkpoint:
        query = (
            spark.readStream.format("leveret")
            .option("uri", url)
            .options(**options)
            .load()
            .writeStream.format("noop")
            .option("checkpointLocation", checkpoint)
            .start()
        )
        try:
            total = lambda: sum(p["numInputRows"] for p in query.recentProgress)  # noqa: E731
            _wait(lambda: total() >= messages, cap)
            progress = [p for p in query.recentProgress if p["numInputRows"]]
        finally:
            query.stop()
    ends = []
    for p in progress:
        started = datetime.datetime.fromisoformat(p["timestamp"].replace("Z", "+00:00"))
        ends.append(
            (started.timestamp() + p["durationMs"]["triggerExecution"] / 1000, p["numInputRows"])
        )
    return _from_first_batch(ends)


def into_spark_by_hand(spark: Any, url: str, messages: int, cap: float) -> Figure:
    ends: list[tuple[float, int]] = []
    connection = pika.BlockingConnection(pika.URLParameters(url))
    channel = connection.channel()
    channel.basic_qos(prefetch_count=PREFETCH)
    schema = (
        "body binary, routing_key string, exchange string, redelivered boolean, "
        "headers map<string,string>"
    )

    def drain_batch(_frame: Any, _batch: int) -> None:
        rows, last = [], 0
        for method, properties, body in channel.consume(QUEUE, inactivity_timeout=0.2):
            if method is None:
                break
            headers = {k: str(v) for k, v in (properties.headers or {}).items()}
            rows.append((body, method.routing_key, method.exchange, method.redelivered, headers))
            last = method.delivery_tag
            if len(rows) >= BATCH:
                break
        if rows:
            spark.createDataFrame(rows, schema).write.format("noop").mode("overwrite").save()
            channel.basic_ack(last, multiple=True)
            ends.append((time.time(), len(rows)))

    with tempfile.TemporaryDirectory() as checkpoint:
        query = (
            spark.readStream.format("rate")
            .option("rowsPerSecond", 1)
            .load()
            .writeStream.foreachBatch(drain_batch)
            .option("checkpointLocation", checkpoint)
            .start()
        )
        try:
            _wait(lambda: sum(n for _, n in ends) >= messages, cap)
        finally:
            query.stop()
            with contextlib.suppress(pika.exceptions.AMQPError):
                channel.cancel()
                connection.close()
    return _from_first_batch(ends)


def _rows(spark: Any, messages: int, size: int) -> Any:
    frame = spark.range(messages).selectExpr(f"cast(repeat('x', {size}) as binary) as body")
    return frame.repartition(2).cache()


def out_of_spark_connector(spark: Any, url: str, frame: Any, messages: int) -> Figure:
    _reset(url)
    started = time.monotonic()
    frame.write.format("leveret").option("uri", url).option("routingKey", QUEUE).mode(
        "append"
    ).save()
    return Figure(messages, time.monotonic() - started)


def out_of_spark_by_hand(spark: Any, url: str, frame: Any, messages: int) -> Figure:
    _reset(url)

    def publish_partition(rows: Iterator[Any]) -> None:
        with pika.BlockingConnection(pika.URLParameters(url)) as connection:
            channel = connection.channel()
            channel.confirm_delivery()
            persistent = pika.BasicProperties(delivery_mode=2)
            for row in rows:
                channel.basic_publish("", QUEUE, bytes(row.body), persistent, mandatory=True)

    started = time.monotonic()
    frame.foreachPartition(publish_partition)
    return Figure(messages, time.monotonic() - started)


def measure(spark: Any, url: str, messages: int, cap: float, by_hand: bool) -> dict[str, Figure]:
    figures: dict[str, Figure] = {}
    for size in SIZES:
        frame = _rows(spark, messages, size)
        frame.count()  # cached before it is timed
        _preload(url, messages, size)
        figures[f"into connector {size}"] = into_spark_connector(spark, url, messages, cap)
        figures[f"out connector {size}"] = out_of_spark_connector(spark, url, frame, messages)
        # Three batches at least: the first is the warm-up.
        streamed = max(messages, 3 * STREAM_BATCH)
        _preload(url, streamed, size, STREAM_QUEUE)
        figures[f"stream connector {size}"] = into_spark_connector(
            spark, url, streamed, cap, stream=True
        )
        if by_hand:
            _preload(url, messages, size)
            figures[f"into by hand {size}"] = into_spark_by_hand(spark, url, messages, cap)
            # pika waits for each confirm: a tenth of the messages tells its rate.
            few = _rows(spark, messages // 10, size)
            figures[f"out by hand {size}"] = out_of_spark_by_hand(spark, url, few, messages // 10)
            few.unpersist()
        frame.unpersist()
    return figures


def _ratio(ours: Figure, theirs: Figure) -> str:
    return f"{ours.rate / theirs.rate:.2f}x" if theirs.rate else "n/a"


def report(leveret: dict[str, Figure], rabbit: dict[str, Figure], messages: int, load: str) -> str:
    lines = [
        START_MARK,
        "## Spark connector (bench/spark.py)",
        "",
        "One local SparkSession (local[2], unpinned) and one broker at a time pinned to core 0; "
        f"{messages:,} persistent messages per run in a durable queue. Into Spark: the queue "
        "preloaded, then a stream to Spark's `noop` sink, msg/s from the end of the first "
        "micro-batch (warm-up) to the end of the last; the connector with maxMessages "
        f"{BATCH:,} and prefetch {PREFETCH:,}, by hand a rate-triggered foreachBatch that drains "
        "as many with pika (basic.consume, the same prefetch), makes a DataFrame of them, writes "
        "it to `noop` and acknowledges them. Out of Spark: a cached DataFrame of as many rows "
        "(2 partitions) written with publisher confirms: the connector's batch write, or "
        "foreachPartition with pika's confirm_delivery (a tenth as many rows: it waits for each "
        "confirm). The hand-written pipeline runs against "
        "RabbitMQ, as users run it today.",
        "",
        "| direction | size | connector → Leveret | connector → RabbitMQ | pika in foreachBatch "
        "→ RabbitMQ | connector (Leveret) / by hand | goal |",
        "| --- | --: | --: | --: | --: | --: | --- |",
    ]
    for direction, label, goal in (
        ("into", "into Spark (msg/s)", f"≥ {GOAL:,} msg/s, ≥ 1.0x"),
        ("out", "out of Spark, confirmed (msg/s)", "≥ 1.0x"),
    ):
        for size in SIZES:
            ours = leveret[f"{direction} connector {size}"]
            theirs_connector = rabbit[f"{direction} connector {size}"]
            by_hand = rabbit[f"{direction} by hand {size}"]
            lines.append(
                f"| {label} | {size:,} B | {ours.rate:,.0f} | {theirs_connector.rate:,.0f} | "
                f"{by_hand.rate:,.0f} | {_ratio(ours, by_hand)} | {goal} |"
            )
    lines += [
        "",
        "From a stream queue (`x-queue-type: stream`, option `stream`): at least "
        f"{3 * STREAM_BATCH:,} messages preloaded, read in offset ranges of "
        f"{STREAM_BATCH:,} per micro-batch (maxMessages), which the executors consume side by "
        "side (x-stream-offset), to `noop`, timed as above; nothing is acknowledged or removed.",
        "",
        "| direction | size | connector → Leveret stream queue | connector → RabbitMQ stream "
        "queue | goal |",
        "| --- | --: | --: | --: | --- |",
    ]
    for size in SIZES:
        ours = leveret[f"stream connector {size}"]
        theirs = rabbit[f"stream connector {size}"]
        lines.append(
            f"| into Spark from a stream (msg/s) | {size:,} B | {ours.rate:,.0f} | "
            f"{theirs.rate:,.0f} | ≥ {GOAL:,} msg/s |"
        )
    lines += [
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores shared with other work, Python "
        f"{platform.python_version()}; run {time.strftime('%Y-%m-%d %H:%M %Z')}; load average "
        f"(1 min) {load}.",
        END_MARK,
    ]
    return "\n".join(lines)


def _descendants(root: int) -> list[int]:
    """`root` and every live process under it (Spark's JVM and its Python workers)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    parent = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(parent, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, ()))
    return found


def _cpu_by_process(pids: list[int]) -> dict[str, float]:
    """CPU seconds so far of each process, by PID and command (java, python3 ...)."""
    found = {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/comm") as comm:
                name = comm.read().strip()
        except OSError:
            continue
        found[f"{name}[{pid}]"] = cpu_seconds([pid])
    return found


def classic_read(spark: Any, size: int, messages: int, cap: float) -> str:
    """One row of the table, a queue on a Leveret node into Spark, with the CPU each process
    used per message over the whole run (the warm-up batch included)."""
    with running_leveret(cpu=0) as broker:
        _preload(broker.url, messages, size)
        node = process_group_pids(broker.process_group)
        node_before = cpu_seconds(node)
        before = _cpu_by_process(_descendants(os.getpid()))
        figure = into_spark_connector(spark, broker.url, messages, cap)
        node_cpu = cpu_seconds(node) - node_before
        after = _cpu_by_process(_descendants(os.getpid()))
    per = 1e6 / messages
    spent = {name: after[name] - before.get(name, 0.0) for name in after}
    lines = [
        f"into Spark, {size} B, connector -> Leveret: {figure.rate:,.0f} msg/s; CPU per "
        f"message: node {node_cpu * per:.1f} us, Spark with its Python side "
        f"{sum(spent.values()) * per:.1f} us"
    ]
    lines += [
        f"  {name}: {seconds * per:.1f} us"
        for name, seconds in sorted(spent.items(), key=lambda item: -item[1])
        if seconds * per >= 0.5
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="spark", description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=200_000, help="per run")
    parser.add_argument("--cap", type=float, default=90, help="most seconds per stream run")
    parser.add_argument("--write", action="store_true", help="update bench/RESULTS.md")
    parser.add_argument(
        "--classic-read",
        type=int,
        metavar="SIZE",
        help="only a queue on a Leveret node into Spark, SIZE-byte messages, with CPU per message",
    )
    args = parser.parse_args(argv)
    if args.classic_read:
        spark = _session()
        try:
            print(classic_read(spark, args.classic_read, args.messages, args.cap))
        finally:
            spark.stop()
        return 0
    before = os.getloadavg()[0]
    spark = _session()
    try:
        with running_leveret(cpu=0) as broker:
            leveret = measure(spark, broker.url, args.messages, args.cap, by_hand=False)
        with running_rabbitmq(cpu=0) as broker:
            rabbit = measure(spark, broker.url, args.messages, args.cap, by_hand=True)
    finally:
        spark.stop()
    load = f"{before:.2f} at the start, {os.getloadavg()[0]:.2f} at the end"
    section = report(leveret, rabbit, args.messages, load)
    print(section)
    if args.write:
        write_section(SECTION, section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
