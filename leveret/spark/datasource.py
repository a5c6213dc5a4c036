"""The format `leveret`: one DataSource whose readers and writers the other modules hold."""

from __future__ import annotations

from typing import Any

from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StructType

from .options import sink_options, source_options
from .rows import SCHEMA
from .sink import BatchWriter, StreamWriter
from .source import BatchReader, StreamReader
from .stream_source import StreamQueueBatchReader, StreamQueueReader


class LeveretDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "leveret"

    def schema(self) -> StructType:
        return SCHEMA

    def reader(self, schema: Any) -> BatchReader | StreamQueueBatchReader:
        options = source_options(self.options)
        if options.stream:
            # A batch read of a stream starts at its beginning unless told otherwise.
            return StreamQueueBatchReader(options, self.options.get("startingOffsets", "earliest"))
        return BatchReader(options)

    def streamReader(self, schema: Any) -> StreamReader | StreamQueueReader:
        options = source_options(self.options)
        return StreamQueueReader(options) if options.stream else StreamReader(options)

    def writer(self, schema: Any, overwrite: bool) -> BatchWriter:
        return BatchWriter(sink_options(self.options))

    def streamWriter(self, schema: Any, overwrite: bool) -> StreamWriter:
        return StreamWriter(sink_options(self.options))
