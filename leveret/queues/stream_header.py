"""The x-stream-offset header of a stream's messages, spliced into the publisher's content
header bytes once, when the message is appended: every other property keeps its exact wire form,
and deliveries send the stored header as it is."""

from __future__ import annotations

import struct

_CONTENT_TYPE = 1 << 15
_CONTENT_ENCODING = 1 << 14
_HEADERS = 1 << 13
_FLAGS_AT = 12  # after class id, weight and body size
_PROPERTIES_AT = 14
_LENGTH = struct.Struct(">I")
_LONG = struct.Struct(">q")
_ENTRY_KEY = b"\x0fx-stream-offset" + b"l"  # a shortstr key, then the type of a signed long


def with_stream_offset(header: bytes, offset: int) -> bytes:
    """`header` with the entry x-stream-offset (a long, as RabbitMQ sends it) at the end of its
    headers table, which is made if the publisher sent none."""
    flags = int.from_bytes(header[_FLAGS_AT:_PROPERTIES_AT], "big")
    position = _PROPERTIES_AT
    for bit in (_CONTENT_TYPE, _CONTENT_ENCODING):
        if flags & bit:
            position += 1 + header[position]
    entry = _ENTRY_KEY + _LONG.pack(offset)
    if flags & _HEADERS:
        (length,) = _LENGTH.unpack_from(header, position)
        end = position + 4 + length
        return b"".join(
            (
                header[:position],
                _LENGTH.pack(length + len(entry)),
                header[position + 4 : end],
                entry,
                header[end:],
            )
        )
    return b"".join(
        (
            header[:_FLAGS_AT],
            (flags | _HEADERS).to_bytes(2, "big"),
            header[_PROPERTIES_AT:position],
            _LENGTH.pack(len(entry)),
            entry,
            header[position:],
        )
    )
