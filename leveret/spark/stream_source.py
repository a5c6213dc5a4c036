"""Reading stream queues (option `stream`), replayably: Spark's offsets are the broker's.

An offset here is each queue's next offset to read ({"events": 1200, ...}), so a micro-batch is
a range of offsets per queue, and reading it again reads the same messages: a query restarted
from its checkpoint re-reads exactly the batch it had planned and not committed, as Kafka's
source does, and every message reaches an idempotent or transactional sink exactly once.

Planning, on the driver: latestOffset asks each stream for its first kept and next offsets (a
consumer from `first` and one from `last`, each cancelled at its first delivery) and plans up to
`maxMessages` from where the last batch ended, shared between the queues. Nothing is consumed
on the driver and nothing is acknowledged for correctness: acks only give a stream consumer
credit, and commit has nothing to tell the broker.

Reading, on the executors: each queue's range is cut into partitions that read side by side,
each with its own connection consuming from x-stream-offset = its start until its end. A start
that retention has deleted starts at the first message kept, as the broker does.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition

from .batches import stream_record_batch
from .consumer import MAX_PREFETCH
from .offsets import EARLIEST, LATEST, shares, split, starting_offsets
from .options import SourceOptions
from .stream_log import Bounds, StreamProbe, read_range

# A queue's range is cut into partitions of about this many messages (at most _MAX_PARTITIONS
# per batch), read by the executors side by side.
_PARTITION_ROWS = 16384
_MAX_PARTITIONS = 8
# Rows per Arrow record batch handed to Spark from a partition.
_ARROW_ROWS = 8192


@dataclass
class OffsetRange(InputPartition):
    queue: str
    start: int
    end: int  # not included


def _read(options: SourceOptions, partition: InputPartition) -> Iterator[pa.RecordBatch]:
    assert isinstance(partition, OffsetRange)
    taken = read_range(
        options.uris,
        partition.queue,
        partition.start,
        partition.end,
        min(MAX_PREFETCH, options.prefetch),
        f"leveret-spark-range-{os.getpid()}",
    )
    for low in range(0, len(taken), _ARROW_ROWS):
        yield stream_record_batch(taken[low : low + _ARROW_ROWS])


class StreamQueueReader(DataSourceStreamReader):
    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self.starts = starting_offsets(options.starting_offsets, options.queues)
        self._probe: StreamProbe | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"options": self.options}  # never the connection

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["options"])  # type: ignore[misc]

    def _bounds(self) -> dict[str, Bounds | None]:
        if self._probe is None:
            self._probe = StreamProbe(
                self.options.uris, f"leveret-spark-stream-probe-{os.getpid()}"
            )
        return self._probe.bounds(self.options.queues)

    def initialOffset(self) -> dict[str, int]:
        bounds = self._bounds()
        resolved = {}
        for queue, start in self.starts.items():
            kept = bounds[queue]
            if start == EARLIEST:
                resolved[queue] = kept.first if kept else 0
            elif start == LATEST:
                # An empty stream's next offset is 0, or (emptied by retention) an offset the
                # broker starts at its first kept message anyway.
                resolved[queue] = kept.next if kept else 0
            else:
                resolved[queue] = start
        return resolved

    def latestOffset(
        self, start: dict[str, int] | None = None, limit: Any = None
    ) -> dict[str, int]:
        bounds = self._bounds()
        begin = dict(start) if start is not None else self.initialOffset()
        backlogs = {}
        for queue in self.options.queues:
            kept = bounds[queue]
            at = begin.get(queue, 0)
            if kept is not None:
                # What retention deleted is skipped, as the broker skips it.
                at = max(at, kept.first)
            begin[queue] = at
            backlogs[queue] = max(0, kept.next - at) if kept is not None else 0
        taken = shares(backlogs, self.options.max_messages)
        ends = {queue: begin[queue] + taken[queue] for queue in self.options.queues}
        if start is not None and all(taken[queue] == 0 for queue in ends):
            return dict(start)  # nothing new: the same offset, so no batch
        return ends

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
        total = sum(max(0, end[queue] - start.get(queue, 0)) for queue in end)
        pieces = min(_MAX_PARTITIONS, max(1, -(-total // _PARTITION_ROWS)))
        ranges: list[InputPartition] = []
        for queue, stop in end.items():
            begin = start.get(queue, 0)
            share = max(1, round(pieces * (stop - begin) / total)) if total else 1
            ranges += [OffsetRange(queue, low, high) for low, high in split(begin, stop, share)]
        return ranges

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        yield from _read(self.options, partition)

    def commit(self, end: dict[str, int]) -> None:
        pass  # the offsets in Spark's checkpoint are the position: the broker keeps nothing

    def stop(self) -> None:
        if self._probe is not None:
            self._probe.close()
        self._probe = None


class StreamQueueBatchReader(DataSourceReader):
    """A batch read of stream queues: from `startingOffsets` (earliest unless given) up to
    what each stream held when the read was planned, at most `maxMessages` per queue; a stream
    read does not consume, so nothing is acknowledged or removed."""

    def __init__(self, options: SourceOptions, starting: str) -> None:
        self.options = options
        self.starts = starting_offsets(starting, options.queues)

    def partitions(self) -> list[InputPartition]:
        options = self.options
        probe = StreamProbe(options.uris, f"leveret-spark-read-probe-{os.getpid()}")
        try:
            bounds = probe.bounds(options.queues)
        finally:
            probe.close()
        ranges: list[InputPartition] = []
        for queue, start in self.starts.items():
            kept = bounds[queue]
            if kept is None:
                continue
            begin = kept.first if start == EARLIEST else kept.next if start == LATEST else start
            begin = max(begin, kept.first)
            end = min(kept.next, begin + options.max_messages)
            pieces = min(_MAX_PARTITIONS, max(1, -(-(end - begin) // _PARTITION_ROWS)))
            ranges += [OffsetRange(queue, low, high) for low, high in split(begin, end, pieces)]
        return ranges

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        yield from _read(self.options, partition)
