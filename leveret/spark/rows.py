"""The source's schema, and how a row becomes a message (the sink)."""

from __future__ import annotations

from typing import Any

from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    IntegerType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from leveret.amqp.properties import BasicProperties, encode_header_payload

# The source's columns; the sink reads the same names, of which only body is required.
SCHEMA = StructType(
    [
        StructField("body", BinaryType()),
        StructField("routing_key", StringType()),
        StructField("exchange", StringType()),
        StructField("redelivered", BooleanType()),
        StructField("queue", StringType()),
        StructField("headers", MapType(StringType(), StringType())),
        StructField("content_type", StringType()),
        StructField("content_encoding", StringType()),
        StructField("delivery_mode", IntegerType()),
        StructField("priority", IntegerType()),
        StructField("correlation_id", StringType()),
        StructField("reply_to", StringType()),
        StructField("expiration", StringType()),
        StructField("message_id", StringType()),
        StructField("timestamp", TimestampType()),
        StructField("type", StringType()),
        StructField("user_id", StringType()),
        StructField("app_id", StringType()),
    ]
)
# The sink's property columns (headers aside), as named in SCHEMA and in BasicProperties.
PROPERTY_COLUMNS = (
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
_ENCODED_LIMIT = 4096  # distinct property sets kept encoded; per-row ids would grow it


class RowEncoder:
    """Rows of one task as messages: (exchange, routing key, content header payload, body).

    Column positions are looked up once, from the first row's fields, and each distinct set
    of properties is encoded once (most rows of a stream repeat one or a few).
    """

    def __init__(self, default_exchange: str, default_key: str, persistent: bool) -> None:
        self.default_exchange = default_exchange
        self.default_key = default_key
        self.delivery_mode = 2 if persistent else 1
        self._columns: dict[str, int] | None = None
        self._encoded: dict[tuple[Any, ...], bytes] = {}

    def _find_columns(self, row: Any) -> dict[str, int]:
        names = list(getattr(row, "__fields__", ()))
        if "body" not in names:
            raise ValueError(
                f"the column 'body' is required (binary or string); the rows have {names}"
            )
        return {name: names.index(name) for name in names}

    def message(self, row: Any, number: int) -> tuple[str, str, bytes, bytes]:
        """ValueError names the row and the column at fault."""
        columns = self._columns
        if columns is None:
            columns = self._columns = self._find_columns(row)
        body = row[columns["body"]]
        if body is None:
            raise ValueError(f"row {number} has no body: the column 'body' is required")
        if isinstance(body, str):
            body = body.encode()
        at = columns.get
        exchange = (row[at("exchange")] if "exchange" in columns else None) or (
            self.default_exchange
        )
        routing_key = (row[at("routing_key")] if "routing_key" in columns else None) or (
            self.default_key
        )
        key = tuple(
            row[columns[name]] if name in columns else None
            for name in ("headers", *PROPERTY_COLUMNS)
        )
        if key[0] is not None:
            key = (tuple(sorted(key[0].items())), *key[1:])
        encoded = self._encoded.get(key)
        if encoded is None:
            if len(self._encoded) >= _ENCODED_LIMIT:
                self._encoded.clear()
            encoded = self._encoded[key] = self._properties(key)
        body = bytes(body)
        return exchange, routing_key, encode_header_payload(60, len(body), encoded), body

    def _properties(self, key: tuple[Any, ...]) -> bytes:
        headers, *values = key
        named = dict(zip(PROPERTY_COLUMNS, values, strict=True))
        stamp = named.pop("timestamp")
        properties = BasicProperties(
            headers=dict(headers) if headers else None,
            timestamp=int(stamp.timestamp()) if stamp is not None else None,
            **{name: value for name, value in named.items() if value is not None},
        )
        if properties.delivery_mode is None:
            properties.delivery_mode = self.delivery_mode
        return properties.encode()
