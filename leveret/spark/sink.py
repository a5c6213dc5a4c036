"""Writing rows as messages, with publisher confirms: a task fails (and Spark retries it) when a
publish is nacked or returned unroutable, or the connection drops, so a batch commits only
once every message in it was confirmed."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import DataSourceStreamWriter, DataSourceWriter, WriterCommitMessage

from .options import SinkOptions
from .publisher import publish
from .rows import RowEncoder


@dataclass
class Published(WriterCommitMessage):
    messages: int


def publish_rows(options: SinkOptions, rows: Iterator[Any]) -> Published:
    encoder = RowEncoder(options.exchange, options.routing_key, options.persistent)
    messages = (encoder.message(row, number) for number, row in enumerate(rows, 1))
    return Published(publish(options.uris, messages, f"leveret-spark-write-{os.getpid()}"))


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
