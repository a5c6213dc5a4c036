"""Writing rows as messages, with publisher confirms: a task fails (and Spark retries it) when a
publish is nacked or returned unroutable, or the connection drops, so a batch commits only
once every message in it was confirmed."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import DataSourceStreamWriter, DataSourceWriter, WriterCommitMessage

from .broker import connect
from .options import SinkOptions
from .rows import row_message


@dataclass
class Published(WriterCommitMessage):
    messages: int


def publish_rows(options: SinkOptions, rows: Iterator[Any]) -> Published:
    count = 0
    with connect(options.uri) as connection:
        channel = connection.channel()
        channel.confirm_delivery()  # each publish returns once confirmed, or raises
        for count, row in enumerate(rows, 1):
            exchange, routing_key, properties, body = row_message(
                row.asDict(), count, options.exchange, options.routing_key, options.persistent
            )
            channel.basic_publish(exchange, routing_key, body, properties, mandatory=True)
    return Published(count)


class BatchWriter(DataSourceWriter):
    def __init__(self, options: SinkOptions) -> None:
        self.options = options

    def write(self, rows: Iterator[Any]) -> Published:
        return publish_rows(self.options, rows)


class StreamWriter(DataSourceStreamWriter):
    def __init__(self, options: SinkOptions) -> None:
        self.options = options

    def write(self, rows: Iterator[Any]) -> Published:
        return publish_rows(self.options, rows)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        pass  # every message was confirmed before its task ended

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        pass  # what was confirmed stays published: at least once, as a retried task's
