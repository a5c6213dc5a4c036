"""The format `leveret`: one DataSource whose readers and writers the other modules hold."""

from __future__ import annotations

from typing import Any

from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StructType

from .options import sink_options, source_options
from .rows import SCHEMA
from .sink import BatchWriter, StreamWriter
from .source import BatchReader, StreamReader


class LeveretDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "leveret"

    def schema(self) -> StructType:
        return SCHEMA

    def reader(self, schema: Any) -> BatchReader:
        return BatchReader(source_options(self.options))

    def streamReader(self, schema: Any) -> StreamReader:
        return StreamReader(source_options(self.options))

    def writer(self, schema: Any, overwrite: bool) -> BatchWriter:
        return BatchWriter(sink_options(self.options))

    def streamWriter(self, schema: Any, overwrite: bool) -> StreamWriter:
        return StreamWriter(sink_options(self.options))
