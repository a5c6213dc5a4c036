"""AMQP field values (bytes, decimals, timestamps, nested tables) as JSON values, and back."""

from __future__ import annotations

import datetime
from decimal import Decimal
from typing import Any


def jsonable(value: Any) -> Any:
    """A decoded field value as RabbitMQ's management API shows it."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", "replace")
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, datetime.datetime):
        return int(value.timestamp())
    if isinstance(value, dict):
        return {str(key): jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(item) for item in value]
    return value


def rfc3339_millis(timestamp: float) -> str:
    """`2026-11-22T04:22:06.158+00:00`, RabbitMQ's format for idle_since."""
    moment = datetime.datetime.fromtimestamp(timestamp, datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}+00:00"
