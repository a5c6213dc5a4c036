"""Reading queues: a batch read drains what is ready (acknowledged, or left queued when `ack`
is false), and a stream acknowledges each micro-batch only once Spark has committed it.

The stream reads on Spark's driver (a SimpleDataSourceStreamReader), where one connection
keeps the deliveries of the batch in progress unacknowledged: a query killed before its commit
leaves them to the broker, which gives them again, marked redelivered, to the restarted query.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pika
from pyspark.sql.datasource import DataSourceReader, InputPartition, SimpleDataSourceStreamReader

from .broker import check_queue, connect
from .options import SourceOptions
from .rows import message_row


@dataclass
class QueuePartition(InputPartition):
    queue: str


class BatchReader(DataSourceReader):
    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> list[QueuePartition]:
        return [QueuePartition(queue) for queue in self.options.queues]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        assert isinstance(partition, QueuePartition)
        options = self.options
        with connect(options.uri) as connection:
            channel = connection.channel()
            check_queue(channel, partition.queue)
            taken = size = last = 0
            while taken < options.max_messages and size < options.max_bytes:
                method, properties, body = channel.basic_get(partition.queue)
                if method is None:
                    break
                taken, size, last = taken + 1, size + len(body), method.delivery_tag
                yield message_row(partition.queue, method, properties, body)
            if last and options.acknowledge:
                channel.basic_ack(last, multiple=True)
            elif last:  # a peek: everything goes back, in its order
                channel.basic_nack(last, multiple=True, requeue=True)


class StreamReader(SimpleDataSourceStreamReader):
    """Offsets count micro-batches: {"batch": n} is the end of the n-th this run has read."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._connection: pika.BlockingConnection | None = None
        self._channel: Any = None
        self._arrived: list[tuple[str, Any, Any, bytes]] = []
        self._uncommitted: list[tuple[int, int]] = []  # (batch, its last delivery tag)

    def initialOffset(self) -> dict[str, int]:
        return {"batch": 0}

    def _consume(self) -> Any:
        if self._channel is None:
            options = self.options
            self._connection = connect(options.uri)
            channel = self._connection.channel()
            channel.basic_qos(prefetch_count=options.prefetch)
            for queue in options.queues:
                check_queue(channel, queue)
                channel.basic_consume(
                    queue,
                    lambda ch, method, props, body, queue=queue: self._arrived.append(
                        (queue, method, props, body)
                    ),
                    arguments={"x-priority": options.priority},
                )
            self._channel = channel
        return self._channel

    def _take(self) -> tuple[list[tuple[Any, ...]], int]:
        """What arrived, up to a batch's limits (waiting a little for the first message)."""
        self._consume()
        connection, options = self._connection, self.options
        assert connection is not None
        deadline = time.monotonic() + options.wait_seconds
        while not self._arrived and time.monotonic() < deadline:
            connection.process_data_events(time_limit=max(0.0, deadline - time.monotonic()))
        connection.process_data_events(time_limit=0)
        rows: list[tuple[Any, ...]] = []
        size = last = 0
        while self._arrived and len(rows) < options.max_messages and size < options.max_bytes:
            queue, method, properties, body = self._arrived.pop(0)
            rows.append(message_row(queue, method, properties, body))
            size, last = size + len(body), method.delivery_tag
        return rows, last

    def read(self, start: dict[str, int]) -> tuple[Iterator[tuple[Any, ...]], dict[str, int]]:
        # Spark plans the batch after `start` once the batch that ends there is written and
        # logged as done: acknowledge it now, as its own commit() may come only with more data.
        self.commit(start)
        rows, last = self._take()
        if not rows:
            return iter(()), start
        batch = start["batch"] + 1
        self._uncommitted.append((batch, last))
        return iter(rows), {"batch": batch}

    def readBetweenOffsets(
        self, start: dict[str, int], end: dict[str, int]
    ) -> Iterator[tuple[Any, ...]]:
        # A batch planned by a run that died: its messages came back (redelivered), and this
        # run reads what is there now in its place.
        rows, last = self._take()
        if rows:
            self._uncommitted.append((end["batch"], last))
        return iter(rows)

    def commit(self, end: dict[str, int]) -> None:
        done = [tag for batch, tag in self._uncommitted if batch <= end["batch"]]
        self._uncommitted = [(b, t) for b, t in self._uncommitted if b > end["batch"]]
        if done and self._channel is not None:
            self._channel.basic_ack(max(done), multiple=True)

    def stop(self) -> None:
        if self._connection is not None and self._connection.is_open:
            self._connection.close()
        self._connection = self._channel = None
