"""Deliveries as Arrow record batches of the source's schema, built a column at a time: Spark
takes them as they are, with no Python object per cell on its side."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema

from leveret.amqp.properties import decode_properties

from .consumer import Delivery
from .offsets import OFFSET_ENTRY, OFFSET_HEADER, stream_offset
from .rows import PROPERTY_COLUMNS, SCHEMA

ARROW_SCHEMA = to_arrow_schema(SCHEMA, timezone="UTC")
# The message properties follow `headers` in the schema, in PROPERTY_COLUMNS' order
# (timestamp in microseconds).
_FIRST_PROPERTY = ARROW_SCHEMA.get_field_index("headers")
# Most streams repeat a few property sets (often none at all, or only delivery_mode): each
# distinct encoding is decoded once. Bounded, so that per-message ids cannot make it grow.
_DECODED_LIMIT = 4096
_decoded: dict[bytes, tuple[Any, ...]] = {}


def _text(value: Any) -> str:
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "replace")
    return str(value)


def _properties(encoded: bytes) -> tuple[Any, ...]:
    """(headers as (key, text) pairs, then PROPERTY_COLUMNS) of a content header's property part."""
    properties = decode_properties(b"\0" * 12 + encoded)
    headers = (
        [(key, _text(value)) for key, value in properties.headers.items()]
        if properties.headers is not None
        else None
    )
    values = [getattr(properties, name) for name in PROPERTY_COLUMNS]
    stamp = PROPERTY_COLUMNS.index("timestamp")
    if values[stamp] is not None:  # seconds on the wire, microseconds in Spark
        values[stamp] *= 1_000_000
    return (headers, *values)


def _cached(encoded: bytes, key: bytes) -> tuple[Any, ...]:
    found = _decoded.get(key)
    if found is None:
        if len(_decoded) >= _DECODED_LIMIT:
            _decoded.clear()
        found = _decoded[key] = _properties(encoded)
    return found


def record_batch(deliveries: Sequence[Delivery]) -> pa.RecordBatch:
    properties = []
    for delivery in deliveries:
        encoded = delivery.header[12:]
        properties.append(_cached(encoded, encoded))
    return _assembled(deliveries, properties)


def stream_record_batch(deliveries: Sequence[Delivery]) -> pa.RecordBatch:
    """Deliveries of a stream queue: their headers differ only in x-stream-offset, so the
    properties are decoded once per set of the others, and each row gets its own offset."""
    properties = []
    for delivery in deliveries:
        encoded = delivery.header[12:]
        at = encoded.rfind(OFFSET_ENTRY)
        if at < 0:
            properties.append(_cached(encoded, encoded))
            continue
        value = at + len(OFFSET_ENTRY)
        shared = _cached(encoded, encoded[:value] + encoded[value + 8 :])
        headers = [
            (key, str(stream_offset(encoded, at)) if key == OFFSET_HEADER else text)
            for key, text in shared[0]
        ]
        properties.append((headers, *shared[1:]))
    return _assembled(deliveries, properties)


def _assembled(
    deliveries: Sequence[Delivery], properties: Sequence[tuple[Any, ...]]
) -> pa.RecordBatch:
    columns: list[Sequence[Any]] = [
        [d.body for d in deliveries],
        [d.routing_key for d in deliveries],
        [d.exchange for d in deliveries],
        [d.redelivered for d in deliveries],
        [d.queue for d in deliveries],
    ]
    if properties:
        columns += list(zip(*properties, strict=True))
    else:
        columns += [[] for _ in range(len(ARROW_SCHEMA) - _FIRST_PROPERTY)]
    arrays = [
        pa.array(column, type=field.type)
        for column, field in zip(columns, ARROW_SCHEMA, strict=True)
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=ARROW_SCHEMA)
