"""How a message becomes a row (the source's schema), and a row a message (the sink)."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

import pika

# The source's columns; the sink reads the same names, of which only body is required.
SCHEMA = (
    "body binary, routing_key string, exchange string, redelivered boolean, queue string, "
    "headers map<string,string>, content_type string, content_encoding string, "
    "delivery_mode int, priority int, correlation_id string, reply_to string, "
    "expiration string, message_id string, timestamp timestamp, type string, user_id string, "
    "app_id string"
)
_PROPERTIES = (
    "content_type",
    "content_encoding",
    "delivery_mode",
    "priority",
    "correlation_id",
    "reply_to",
    "expiration",
    "message_id",
    "timestamp",
    "type",
    "user_id",
    "app_id",
)


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def message_row(
    queue: str, method: Any, properties: pika.BasicProperties, body: bytes
) -> tuple[Any, ...]:
    """One delivered message as a row of SCHEMA (header values as text)."""
    headers = {key: _text(value) for key, value in (properties.headers or {}).items()}
    values = [getattr(properties, name) for name in _PROPERTIES]
    if properties.timestamp is not None:  # seconds since the epoch on the wire
        values[_PROPERTIES.index("timestamp")] = datetime.datetime.fromtimestamp(
            properties.timestamp, datetime.UTC
        )
    return (
        body,
        method.routing_key,
        method.exchange,
        bool(method.redelivered),
        queue,
        headers,
        *values,
    )


def row_message(
    row: Mapping[str, Any], number: int, default_exchange: str, default_key: str, persistent: bool
) -> tuple[str, str, pika.BasicProperties, bytes]:
    """(exchange, routing key, properties, body) of one row; ValueError names what is wrong."""
    body = row.get("body")
    if body is None:
        raise ValueError(f"row {number} has no body: the column 'body' is required")
    if isinstance(body, str):
        body = body.encode()
    exchange = row.get("exchange") or default_exchange
    routing_key = row.get("routing_key") or default_key
    properties = pika.BasicProperties(
        headers=dict(row["headers"]) if row.get("headers") else None,
        delivery_mode=row.get("delivery_mode") or (2 if persistent else 1),
        **{
            name: row.get(name)
            for name in _PROPERTIES
            if name not in ("delivery_mode", "timestamp") and row.get(name) is not None
        },
    )
    stamp = row.get("timestamp")
    if stamp is not None:
        properties.timestamp = int(stamp.timestamp())
    return exchange, routing_key, properties, bytes(body)
