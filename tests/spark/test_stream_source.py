"""Stream queues read by offset (option `stream`) through a local SparkSession against a real
node: Spark's offsets are the broker's, startingOffsets earliest, latest and explicit, a batch
read, two streams in one query, a start that retention deleted, and a query that fails, or
whose driver is killed, mid-batch re-reading exactly its uncommitted range after a restart
(every message once in the sink)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.spark.conftest import count, declare, publish
from tests.support.node import NodeProcess, wait_for

try:
    from leveret.spark.offsets import shares, split
except ImportError as missing:  # pyspark is the spark extra
    if os.environ.get("CI") == "true":
        raise
    pytest.skip(f"pyspark is not installed: {missing}", allow_module_level=True)

STREAM_SECONDS = 60  # the most any query here waits for its messages
DRIVER_SECONDS = 180  # a driver of its own starts a JVM first
STREAM = {"x-queue-type": "stream"}
Row = tuple[str, int, bytes]  # queue, x-stream-offset, body


@pytest.fixture(scope="module")
def node() -> Iterator[NodeProcess]:
    running = NodeProcess().start()
    try:
        yield running
    finally:
        running.cleanup()


def _reader(spark: Any, node: NodeProcess, queues: str, **options: str) -> Any:
    reader = (
        spark.readStream.format("leveret")
        .option("uri", node.url)
        .option("queue", queues)
        .option("stream", "true")
    )
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load()


def _rows(frame: Any) -> list[Row]:
    return [
        (row.queue, int(row.headers["x-stream-offset"]), bytes(row.body)) for row in frame.collect()
    ]


def _started(
    spark: Any,
    node: NodeProcess,
    queues: str,
    sink: Callable[[Any, int], None],
    checkpoint: str,
    **options: str,
) -> Any:
    return (
        _reader(spark, node, queues, **options)
        .writeStream.foreachBatch(sink)
        .option("checkpointLocation", checkpoint)
        .start()
    )


def _logged_offsets(checkpoint: str) -> dict[int, dict[str, int]]:
    """Each planned batch's end as Spark logged it in the checkpoint (its last line)."""
    logged = {}
    for path in (Path(checkpoint) / "offsets").iterdir():
        if path.name.isdigit():
            logged[int(path.name)] = json.loads(path.read_text().splitlines()[-1])
    return logged


def test_a_stream_queue_read_from_the_earliest_offset(spark: Any, node: NodeProcess) -> None:
    declare(node.url, "spark.log", arguments=STREAM)
    publish(node.url, "spark.log", [b"m%d" % n for n in range(50)])
    seen: list[Row] = []
    with tempfile.TemporaryDirectory() as checkpoint:
        query = _started(
            spark,
            node,
            "spark.log",
            lambda frame, _batch: seen.extend(_rows(frame)),
            checkpoint,
            startingOffsets="earliest",
            maxMessages="20",
        )
        try:
            wait_for(lambda: len(seen) >= 50, STREAM_SECONDS, 0.2)
            publish(node.url, "spark.log", [b"m%d" % n for n in range(50, 60)])
            wait_for(lambda: len(seen) >= 60, STREAM_SECONDS, 0.2)
        finally:
            query.stop()
        logged = _logged_offsets(checkpoint)
    assert seen == [("spark.log", n, b"m%d" % n) for n in range(60)]
    # Spark's offsets are the stream's: at most maxMessages a batch, ending at the next offset.
    ends = [logged[batch]["spark.log"] for batch in sorted(logged)]
    assert ends[:3] == [20, 40, 50] and ends[-1] == 60
    assert count(node.url, "spark.log") == 60  # read, not consumed


def test_starting_offsets_latest_and_explicit(spark: Any, node: NodeProcess) -> None:
    declare(node.url, "spark.tail", arguments=STREAM)
    publish(node.url, "spark.tail", [b"old%d" % n for n in range(10)])
    latest: list[Row] = []
    explicit: list[Row] = []
    with tempfile.TemporaryDirectory() as one, tempfile.TemporaryDirectory() as two:
        from_latest = _started(
            spark, node, "spark.tail", lambda f, _b: latest.extend(_rows(f)), one
        )  # latest is the default
        from_seven = _started(
            spark,
            node,
            "spark.tail",
            lambda f, _b: explicit.extend(_rows(f)),
            two,
            startingOffsets=json.dumps({"spark.tail": 7}),
        )
        try:
            # The first trigger resolves `latest`: new messages only after it.
            wait_for(lambda: bool(from_latest.recentProgress), STREAM_SECONDS, 0.1)
            publish(node.url, "spark.tail", [b"new%d" % n for n in range(5)])
            wait_for(lambda: len(latest) >= 5 and len(explicit) >= 8, STREAM_SECONDS, 0.2)
        finally:
            from_latest.stop()
            from_seven.stop()
    assert latest == [("spark.tail", 10 + n, b"new%d" % n) for n in range(5)]
    assert explicit == [("spark.tail", n, b"old%d" % n) for n in range(7, 10)] + [
        ("spark.tail", 10 + n, b"new%d" % n) for n in range(5)
    ]


def test_a_batch_read_of_a_stream_queue(spark: Any, node: NodeProcess) -> None:
    declare(node.url, "spark.once", arguments=STREAM)
    publish(node.url, "spark.once", [b"b%d" % n for n in range(30)])
    read = spark.read.format("leveret").option("uri", node.url).option("queue", "spark.once")
    read = read.option("stream", "true")
    assert sorted(_rows(read.load())) == [("spark.once", n, b"b%d" % n) for n in range(30)]
    ranged = read.option("startingOffsets", '{"spark.once": 25}').load()
    assert sorted(_rows(ranged)) == [("spark.once", n, b"b%d" % n) for n in range(25, 30)]
    assert count(node.url, "spark.once") == 30


def test_two_stream_queues_in_one_query(spark: Any, node: NodeProcess) -> None:
    declare(node.url, "spark.left", "spark.right", arguments=STREAM)
    publish(node.url, "spark.left", [b"l%d" % n for n in range(40)])
    publish(node.url, "spark.right", [b"r%d" % n for n in range(6)])
    seen: list[Row] = []
    with tempfile.TemporaryDirectory() as checkpoint:
        query = _started(
            spark,
            node,
            "spark.left,spark.right",
            lambda frame, _batch: seen.extend(_rows(frame)),
            checkpoint,
            startingOffsets=json.dumps({"spark.left": 4, "spark.right": -2}),
            maxMessages="12",
        )
        try:
            wait_for(lambda: len(seen) >= 42, STREAM_SECONDS, 0.2)
        finally:
            query.stop()
        logged = _logged_offsets(checkpoint)
    assert [(o, b) for q, o, b in seen if q == "spark.left"] == [
        (n, b"l%d" % n) for n in range(4, 40)
    ]
    assert [(o, b) for q, o, b in seen if q == "spark.right"] == [(n, b"r%d" % n) for n in range(6)]
    # The first batch shares maxMessages: the short queue all it has, the other the rest.
    assert logged[0] == {"spark.left": 10, "spark.right": 6}
    assert logged[max(logged)] == {"spark.left": 40, "spark.right": 6}


def test_a_query_killed_mid_batch_rereads_exactly_its_range(spark: Any, node: NodeProcess) -> None:
    """The sink keeps each batch by its id (as a transactional sink does). The third batch
    fails after the sink took it, so Spark never commits it; restarted from the checkpoint,
    the query reads that batch's range again, the very same messages, and goes on: every
    message is in the sink exactly once, including those published while it was down."""
    declare(node.url, "spark.replay", arguments=STREAM)
    publish(node.url, "spark.replay", [b"p%d" % n for n in range(40)])
    sink: dict[int, list[Row]] = {}
    failed: list[Row] = []

    def first_run(frame: Any, batch: int) -> None:
        rows = _rows(frame)
        sink[batch] = rows
        if batch == 2:
            failed.extend(rows)
            raise RuntimeError("the query died in batch 2")

    def second_run(frame: Any, batch: int) -> None:
        sink[batch] = _rows(frame)

    def in_sink() -> int:
        return sum(len(rows) for rows in sink.values())

    with tempfile.TemporaryDirectory() as checkpoint:
        options = {"startingOffsets": "earliest", "maxMessages": "10"}
        query = _started(spark, node, "spark.replay", first_run, checkpoint, **options)
        try:
            with pytest.raises(Exception, match="the query died in batch 2"):
                query.awaitTermination(STREAM_SECONDS)
        finally:
            query.stop()
        planned = _logged_offsets(checkpoint)
        publish(node.url, "spark.replay", [b"p%d" % n for n in range(40, 55)])
        query = _started(spark, node, "spark.replay", second_run, checkpoint, **options)
        try:
            wait_for(lambda: in_sink() >= 55, STREAM_SECONDS, 0.2)
        finally:
            query.stop()
    assert failed == [("spark.replay", n, b"p%d" % n) for n in range(20, 30)]
    assert planned[2] == {"spark.replay": 30}
    assert sink[2] == failed  # the same range, the same messages
    kept = [row for batch in sorted(sink) for row in sink[batch]]
    assert kept == [("spark.replay", n, b"p%d" % n) for n in range(55)]


def test_a_start_that_retention_deleted_starts_at_the_first_kept(
    spark: Any, node: NodeProcess
) -> None:
    # Records of 100-byte bodies take about 170 bytes: a few per 1000-byte segment.
    declare(
        node.url,
        "spark.short",
        arguments={
            **STREAM,
            "x-max-length-bytes": 3000,
            "x-stream-max-segment-size-bytes": 1000,
        },
    )
    publish(node.url, "spark.short", [b"%03d" % n + b"x" * 97 for n in range(100)])
    seen: list[Row] = []
    with tempfile.TemporaryDirectory() as checkpoint:
        query = _started(
            spark,
            node,
            "spark.short",
            lambda frame, _batch: seen.extend(_rows(frame)),
            checkpoint,
            startingOffsets='{"spark.short": 0}',
        )
        try:
            wait_for(lambda: bool(seen) and seen[-1][1] == 99, STREAM_SECONDS, 0.2)
        finally:
            query.stop()
    # Retention runs as segments fill and every second, so it may delete more after the read:
    # the query started at the first message kept then (not 0), read on without a gap, and read
    # at least everything kept by the end.
    start = seen[0][1]
    assert start > 0, "retention deleted nothing"
    assert start <= 100 - count(node.url, "spark.short")
    assert [(offset, body[:3]) for _, offset, body in seen] == [
        (n, b"%03d" % n) for n in range(start, 100)
    ]


def test_a_driver_killed_mid_batch_rereads_exactly_its_range(
    spark: Any, node: NodeProcess, tmp_path: Path
) -> None:
    """A query in a Spark driver of its own hangs in its third batch, after its sink wrote it,
    and the driver is killed (SIGKILL): Spark never committed the batch. Restarted here from
    the same checkpoint, the query reads that batch's range again, the very same messages, and
    the sink (a file per batch id) ends with every message exactly once."""
    declare(node.url, "spark.killed", arguments=STREAM)
    publish(node.url, "spark.killed", [b"k%d" % n for n in range(40)])
    with tempfile.TemporaryDirectory() as checkpoint, tempfile.TemporaryDirectory() as out:
        sink = Path(out)
        arguments = [node.url, "spark.killed", checkpoint, out, "2", str(tmp_path)]
        driver = subprocess.Popen(
            [sys.executable, "-m", "tests.spark.replay_driver", *arguments],
            cwd=Path(__file__).resolve().parents[2],
            start_new_session=True,  # its JVM too is killed with its process group
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_for(
                lambda: (sink / "hanging").exists() or driver.poll() is not None,
                DRIVER_SECONDS,
                0.2,
            )
            assert driver.poll() is None, f"the driver ended with {driver.returncode}"
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(driver.pid, signal.SIGKILL)
            driver.wait(30)
        assert (Path(checkpoint) / "offsets" / "2").exists()
        assert not (Path(checkpoint) / "commits" / "2").exists()
        written = (sink / "batch-2.json").read_text()
        publish(node.url, "spark.killed", [b"k%d" % n for n in range(40, 55)])

        def keep(frame: Any, batch: int) -> None:
            rows = [[offset, body.decode()] for _, offset, body in _rows(frame)]
            (sink / f"batch-{batch}.json").write_text(json.dumps(rows))

        def kept() -> list[list[Any]]:
            batches = sorted(sink.glob("batch-*.json"), key=lambda p: int(p.stem[6:]))
            return [row for path in batches for row in json.loads(path.read_text())]

        query = _started(
            spark,
            node,
            "spark.killed",
            keep,
            checkpoint,
            startingOffsets="earliest",
            maxMessages="10",
        )
        try:
            wait_for(lambda: len(kept()) >= 55, STREAM_SECONDS, 0.2)
        finally:
            query.stop()
        assert json.loads(written) == [[n, f"k{n}"] for n in range(20, 30)]
        assert (sink / "batch-2.json").read_text() == written  # the same range, replayed
        assert kept() == [[n, f"k{n}"] for n in range(55)]


def test_errors_name_the_option(spark: Any, node: NodeProcess) -> None:
    declare(node.url, "spark.classic")
    publish(node.url, "spark.classic", [b"c"])

    def read(**options: str) -> Any:
        reader = spark.read.format("leveret").option("uri", node.url)
        return reader.option("queue", "spark.classic").options(**options).load()

    with pytest.raises(Exception, match=r"option 'stream' is true but queue 'spark\.classic'"):
        read(stream="true").collect()
    with pytest.raises(Exception, match="option 'startingOffsets' needs option 'stream' true"):
        read(startingOffsets="earliest").collect()
    with pytest.raises(Exception, match="option 'startingOffsets' must give an offset for each"):
        read(stream="true", startingOffsets='{"other": 1}').collect()
    with pytest.raises(Exception, match="option 'startingOffsets' must be earliest, latest"):
        read(stream="true", startingOffsets="first").collect()
    assert count(node.url, "spark.classic") == 1


def test_shares_and_splits() -> None:
    assert shares({"a": 100, "b": 3}, 10) == {"a": 7, "b": 3}
    assert shares({"a": 100, "b": 100}, 10) == {"a": 5, "b": 5}
    assert shares({"a": 0, "b": 0}, 10) == {"a": 0, "b": 0}
    assert split(10, 20, 3) == [(10, 14), (14, 18), (18, 20)]
    assert split(5, 5, 4) == []
