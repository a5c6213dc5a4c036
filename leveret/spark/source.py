"""Reading queues: a batch read drains what is ready (acknowledged, or left queued when `ack`
is false), and a stream acknowledges each micro-batch only once Spark has committed it.

Where the stream reads, and why there: acknowledgements belong to the channel that received
the deliveries, and Spark decides that a micro-batch is done on the driver, so the stream
consumes on the driver and keeps the batch in progress unacknowledged on its own connections
until Spark has written and logged it. A query killed before that leaves the batch to the
broker, which gives it again, marked redelivered, to the restarted query. Consuming on the
executors instead would spread the parsing, but a task ends before the batch is logged, and its
channel with it: the broker would requeue the batch (or the task would have to acknowledge early
and lose the guarantee).

What makes it fast: the queues are consumed by Leveret's small asyncio AMQP client
(federation/client.py) on a thread of their own, which parses deliveries inline as they arrive,
with no task and no Python object per frame, while Spark works on the batch before; with a
prefetch of twice the batch size the next batch is waiting when Spark asks for it. A micro-batch
becomes one Arrow record batch built a column at a time (batches.py), cut into Arrow IPC streams
that the reader holds and serves (batch_server.py) until the batch is committed: a partition only
names its stream, and the executor fetches it and hands it to Spark as Arrow, without converting
a row in Python. (Partitions that carried the data were Java-serialized into every task, which
cost Spark's JVM more CPU per message than anything else. A SimpleDataSourceStreamReader would
be simpler still, but Spark then turns the whole batch into rows on the driver's JVM alone:
measured, the partitions take about 60% of its time per batch.)

Offsets count this run's micro-batches ({"batch": n}): queues have no positions to replay from,
so a batch planned by a run that died reads nothing when replayed (no partitions), and its
messages arrive again, redelivered, in the batches after it. Stream queues do keep positions:
stream_source.py puts those in the offsets instead, and replays a planned batch exactly.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition

from .batch_server import BatchRef, BatchServer, fetch
from .batches import record_batch
from .consumer import MAX_PREFETCH, Consumer
from .options import SourceOptions

# How long a batch read waits, at most, for the messages its queue said were ready.
_BATCH_READ_SECONDS = 120.0
# A micro-batch is cut into partitions of about this many rows (at most _MAX_PARTITIONS), so
# that executors turn them into Spark's rows side by side.
_PARTITION_ROWS = 16384
_MAX_PARTITIONS = 8


@dataclass
class QueuePartition(InputPartition):
    queue: str


class BatchReader(DataSourceReader):
    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> list[QueuePartition]:
        return [QueuePartition(queue) for queue in self.options.queues]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, QueuePartition)
        options = self.options
        # A consumer can hold at most a prefetch of unacknowledged deliveries, and a batch read
        # acknowledges only once Spark has taken them all.
        limit = min(options.max_messages, MAX_PREFETCH)
        consumer = Consumer(
            options.uris,
            [partition.queue],
            prefetch=limit,
            priority=options.priority,
            name=f"leveret-spark-read-{os.getpid()}",
        ).start()
        try:
            wanted = min(limit, consumer.ready[partition.queue])
            if wanted:
                consumer.wait_for(wanted, _BATCH_READ_SECONDS, options.wait_seconds)
            taken = consumer.take(wanted, options.max_bytes, 0)
            if taken:
                yield record_batch(taken)
                if options.acknowledge:
                    consumer.acknowledge(consumer.last_tags(taken))
        finally:
            consumer.close()  # what was not acknowledged goes back, in its order


@dataclass
class FetchedPartition(InputPartition):
    """A slice of a micro-batch, which the executor fetches from the driver's reader."""

    ref: BatchRef


def _partitions(batch: pa.RecordBatch) -> list[pa.Buffer]:
    """The batch cut into Arrow IPC streams of about _PARTITION_ROWS rows each."""
    count = min(_MAX_PARTITIONS, -(-batch.num_rows // _PARTITION_ROWS))
    size = -(-batch.num_rows // count)
    partitions = []
    for start in range(0, batch.num_rows, size):
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, batch.schema) as stream:
            stream.write_batch(batch.slice(start, size))
        partitions.append(sink.getvalue())
    return partitions


class StreamReader(DataSourceStreamReader):
    """Offsets count micro-batches: {"batch": n} is the end of the n-th this run has read."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._consumer: Consumer | None = None
        self._handed_out = 0  # the last batch this run read
        # Each batch read and not yet acknowledged: its last tag per queue; the server holds
        # its data, and the partitions handed to Spark once planned.
        self._pending: dict[int, dict[str, int]] = {}
        self._planned: dict[int, list[FetchedPartition]] = {}
        self._server: BatchServer | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"options": self.options}  # never the connections

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["options"])  # type: ignore[misc]

    def initialOffset(self) -> dict[str, int]:
        return {"batch": 0}

    def _started(self) -> Consumer:
        if self._consumer is None:
            options = self.options
            self._consumer = Consumer(
                options.uris,
                options.queues,
                prefetch=options.prefetch,
                priority=options.priority,
                name=f"leveret-spark-stream-{os.getpid()}",
            ).start()
        return self._consumer

    def latestOffset(
        self, start: dict[str, int] | None = None, limit: Any = None
    ) -> dict[str, int]:
        # Spark asks for the next batch once the one before it is written and logged as done
        # (`start` is its end; PySpark before 4.2 does not say): acknowledge it now, as its
        # own commit() may come only with more data.
        done = start["batch"] if start is not None else self._handed_out
        self.commit({"batch": done})
        consumer = self._started()
        options = self.options
        taken = consumer.take(options.max_messages, options.max_bytes, options.wait_seconds)
        if not taken:
            return {"batch": done}
        # Numbered on from `start`, which after a restart is the last batch of the run before.
        batch = max(done, self._handed_out) + 1
        self._pending[batch] = consumer.last_tags(taken)
        if self._server is None:
            self._server = BatchServer(options.driver_host)
        refs = self._server.hold(batch, _partitions(record_batch(taken)))
        self._planned[batch] = [FetchedPartition(ref) for ref in refs]
        self._handed_out = batch
        return {"batch": batch}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
        # None planned: a batch planned by a run that died. Its messages went back to their
        # queues, marked redelivered, and arrive in this run's next batches.
        return [
            part
            for batch, parts in sorted(self._planned.items())
            if start["batch"] < batch <= end["batch"]
            for part in parts
        ]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, FetchedPartition)
        yield from pa.ipc.open_stream(fetch(partition.ref)).read_all().to_batches()

    def commit(self, end: dict[str, int]) -> None:
        done: dict[str, int] = {}
        for batch in sorted(self._pending):
            if batch <= end["batch"]:
                done.update(self._pending.pop(batch))  # later batches carry later tags
                self._planned.pop(batch, None)
        if self._server is not None:
            self._server.drop_through(end["batch"])
        if done and self._consumer is not None:
            self._consumer.acknowledge(done)

    def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        self._server = None
        if self._consumer is not None:
            self._consumer.close()
        self._consumer = None
