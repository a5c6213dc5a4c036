"""Spark reads from and writes to Leveret (or any RabbitMQ-compatible broker) queues through
PySpark's Python Data Source API, as the format `leveret` (`pip install leveret[spark]`)."""

from __future__ import annotations

from typing import Any

from .datasource import LeveretDataSource

__all__ = ["LeveretDataSource", "register"]


def register(spark: Any) -> None:
    """Make `spark.read/readStream/write/writeStream.format("leveret")` available."""
    spark.dataSource.register(LeveretDataSource)
