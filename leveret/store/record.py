"""The stored form of one message in a queue segment: fixed struct fields, then the exchange, the
routing key, the AMQP content-header payload verbatim, and the body or a reference to it."""

from __future__ import annotations

import struct
from typing import NamedTuple

from .errors import CorruptRecord

RECORD_VERSION = 1

# version, flags, seq, exchange length, routing key length, header payload length
RECORD_PREFIX = _PREFIX = struct.Struct("<BBQBBI")
PREFIX_SIZE = _PREFIX.size
# The seq alone, for checking liveness before decoding anything else.
SEQ_FIELD = struct.Struct("<Q")
SEQ_OFFSET = 2
# shared-store file id, offset of the body's frame there, body size
_REF = struct.Struct("<IQI")
_pack_prefix = _PREFIX.pack
_unpack_prefix = _PREFIX.unpack_from

FLAG_SHARED_BODY = 0x01
FLAG_TRANSIENT = 0x02
# Stream records carry their append time (milliseconds since the epoch) right after the fixed
# fields, for x-stream-offset timestamps and x-max-age; queue records do without.
FLAG_TIMESTAMP = 0x04
_TIMESTAMP = struct.Struct("<Q")
TIMESTAMP_SIZE = _TIMESTAMP.size


class Location(NamedTuple):
    """Where a record lives: segment number, offset of its frame, and the frame's size."""

    segment: int
    offset: int
    size: int


class BodyRef(NamedTuple):
    """A body kept once in the vhost's shared store, referenced from queue records."""

    file_id: int
    offset: int
    size: int


class IndexEntry(NamedTuple):
    """A live message as recovery lists it: everything but the body."""

    seq: int
    location: Location
    redelivered: bool
    body_size: int
    persistent: bool


class StoredMessage(NamedTuple):
    """A message as read back for delivery."""

    seq: int
    exchange: str
    routing_key: str
    header_payload: bytes
    body: bytes
    redelivered: bool
    persistent: bool
    location: Location
    timestamp: int = 0  # milliseconds since the epoch; stream records only


class RecordHead(NamedTuple):
    """The fields recovery needs, decoded without copying the body."""

    seq: int
    flags: int
    body_size: int
    body_ref: BodyRef | None


def encode_message(
    seq: int,
    exchange: bytes,
    routing_key: bytes,
    header_payload: bytes,
    body: bytes | BodyRef,
    persistent: bool,
    timestamp: int | None = None,
) -> bytes:
    """The record payload (before framing); `timestamp` only for stream records."""
    if len(exchange) > 255 or len(routing_key) > 255:
        raise ValueError("exchange and routing key are AMQP short strings (at most 255 bytes)")
    flags = 0 if persistent else FLAG_TRANSIENT
    if isinstance(body, BodyRef):
        tail: bytes = _REF.pack(*body)
        flags |= FLAG_SHARED_BODY
    else:
        tail = body
    if timestamp is not None:
        flags |= FLAG_TIMESTAMP
    prefix = _pack_prefix(
        RECORD_VERSION, flags, seq, len(exchange), len(routing_key), len(header_payload)
    )
    if timestamp is not None:
        prefix += _TIMESTAMP.pack(timestamp)
    return b"".join((prefix, exchange, routing_key, header_payload, tail))


def _fields_start(flags: int) -> int:
    """Where the exchange name begins: after the fixed fields and the timestamp, if any."""
    return PREFIX_SIZE + TIMESTAMP_SIZE if flags & FLAG_TIMESTAMP else PREFIX_SIZE


def record_timestamp(payload: memoryview) -> int:
    """The append time of a stream record (0 for records without one)."""
    if len(payload) < PREFIX_SIZE + TIMESTAMP_SIZE or not payload[1] & FLAG_TIMESTAMP:
        return 0
    return int(_TIMESTAMP.unpack_from(payload, PREFIX_SIZE)[0])


def _check_version(payload: memoryview) -> tuple[int, int, int, int, int, int]:
    if len(payload) < PREFIX_SIZE:
        raise CorruptRecord("record shorter than its fixed fields")
    fields = _unpack_prefix(payload, 0)
    if fields[0] != RECORD_VERSION:
        raise CorruptRecord(f"unknown record version {fields[0]}")
    return fields


def decode_head(payload: memoryview) -> RecordHead:
    _, flags, seq, exchange_len, key_len, header_len = _check_version(payload)
    body_start = _fields_start(flags) + exchange_len + key_len + header_len
    if flags & FLAG_SHARED_BODY:
        if len(payload) != body_start + _REF.size:
            raise CorruptRecord("bad shared body reference")
        ref = BodyRef(*_REF.unpack_from(payload, body_start))
        return RecordHead(seq, flags, ref.size, ref)
    if len(payload) < body_start:
        raise CorruptRecord("record shorter than its fields")
    return RecordHead(seq, flags, len(payload) - body_start, None)


DecodedMessage = tuple[int, int, str, str, bytes, bytes | BodyRef]


def decode_message(payload: memoryview) -> DecodedMessage:
    """(seq, flags, exchange, routing key, header payload, body or BodyRef): a plain tuple,
    since this runs once per message paged in."""
    if len(payload) < PREFIX_SIZE:
        raise CorruptRecord("record shorter than its fixed fields")
    version, flags, seq, exchange_len, key_len, header_len = _unpack_prefix(payload, 0)
    fields_start = _fields_start(flags)
    key_start = fields_start + exchange_len
    header_start = key_start + key_len
    body_start = header_start + header_len
    if version != RECORD_VERSION or body_start > len(payload):
        raise CorruptRecord(f"undecodable record (version {version})")
    body: bytes | BodyRef
    if flags & FLAG_SHARED_BODY:
        if len(payload) != body_start + _REF.size:
            raise CorruptRecord("bad shared body reference")
        body = BodyRef(*_REF.unpack_from(payload, body_start))
    else:
        body = bytes(payload[body_start:])
    return (
        seq,
        flags,
        str(payload[fields_start:key_start], "utf-8", "surrogateescape"),
        str(payload[key_start:header_start], "utf-8", "surrogateescape"),
        bytes(payload[header_start:body_start]),
        body,
    )


def encode_name(name: str) -> bytes:
    """Exchange names and routing keys as bytes; surrogateescape keeps any str round-tripping."""
    return name.encode("utf-8", "surrogateescape")


def decode_name(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")
