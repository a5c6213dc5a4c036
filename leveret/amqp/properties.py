"""Content header frames: basic properties, decoded only when a message's properties are needed."""

from __future__ import annotations

import struct
from dataclasses import dataclass, fields
from typing import Any

from .fields import (
    DecodeError,
    FieldTable,
    decode_shortstr,
    decode_table,
    encode_shortstr,
    encode_table,
)

_BODY_SIZE = struct.Struct(">Q")
_UNPACK_Q = struct.Struct(">Q").unpack_from

# (name, wire type) in flag order: the first property is flag bit 15.
_PROPERTY_ORDER: tuple[tuple[str, str], ...] = (
    ("content_type", "s"),
    ("content_encoding", "s"),
    ("headers", "F"),
    ("delivery_mode", "o"),
    ("priority", "o"),
    ("correlation_id", "s"),
    ("reply_to", "s"),
    ("expiration", "s"),
    ("message_id", "s"),
    ("timestamp", "T"),
    ("type", "s"),
    ("user_id", "s"),
    ("app_id", "s"),
    ("cluster_id", "s"),
)


@dataclass(slots=True)
class BasicProperties:
    content_type: str | None = None
    content_encoding: str | None = None
    headers: FieldTable | None = None
    delivery_mode: int | None = None
    priority: int | None = None
    correlation_id: str | None = None
    reply_to: str | None = None
    expiration: str | None = None
    message_id: str | None = None
    timestamp: int | None = None
    type: str | None = None
    user_id: str | None = None
    app_id: str | None = None
    cluster_id: str | None = None

    def encode(self) -> bytes:
        """Property flags followed by the present properties."""
        flags = 0
        parts: list[bytes] = []
        for bit, (name, kind) in enumerate(_PROPERTY_ORDER):
            value = getattr(self, name)
            if value is None:
                continue
            flags |= 1 << (15 - bit)
            if kind == "s":
                parts.append(encode_shortstr(value))
            elif kind == "F":
                parts.append(encode_table(value))
            elif kind == "o":
                parts.append(bytes((value & 0xFF,)))
            else:
                parts.append(struct.pack(">Q", value))
        return struct.pack(">H", flags) + b"".join(parts)

    def as_dict(self) -> dict[str, Any]:
        return {
            f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None
        }


def decode_properties(payload: bytes, offset: int = 12) -> BasicProperties:
    """Decode properties from a content header payload (flags start at byte 12)."""
    try:
        flags = struct.unpack_from(">H", payload, offset)[0]
        offset += 2
        # Continuation flags (bit 0) are not used by basic; a set bit means a malformed frame.
        if flags & 1:
            raise DecodeError("property flags continuation is not supported")
        values: dict[str, Any] = {}
        for bit, (name, kind) in enumerate(_PROPERTY_ORDER):
            if not flags & (1 << (15 - bit)):
                continue
            if kind == "s":
                values[name], offset = decode_shortstr(payload, offset)
            elif kind == "F":
                values[name], offset = decode_table(payload, offset)
            elif kind == "o":
                values[name] = payload[offset]
                offset += 1
            else:
                values[name] = _UNPACK_Q(payload, offset)[0]
                offset += 8
    except (IndexError, struct.error) as exc:
        raise DecodeError("content header truncated") from exc
    return BasicProperties(**values)


def encode_header_payload(class_id: int, body_size: int, properties: bytes) -> bytes:
    """A content header payload from encoded properties (flags included)."""
    return struct.pack(">HHQ", class_id, 0, body_size) + properties


def header_with_body_size(header_payload: bytes, body_size: int) -> bytes:
    """The same header with another body size (used when a body is rewritten)."""
    return header_payload[:4] + _BODY_SIZE.pack(body_size) + header_payload[12:]


def read_body_size(header_payload: bytes) -> int:
    return _UNPACK_Q(header_payload, 4)[0]
