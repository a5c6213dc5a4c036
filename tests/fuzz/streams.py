"""How a fuzz input becomes a client's byte stream: its first byte says how it is split."""

from __future__ import annotations

import struct
from collections.abc import Iterator

_FRAME_HEAD = struct.Struct(">BHI")


def chunks(data: bytes) -> Iterator[bytes]:
    """The stream (all but the first byte) in reads of the size the first byte gives (0: one
    read), so that frames split across reads are exercised as well as whole ones."""
    if not data:
        return
    size, stream = data[0], data[1:]
    if size == 0:
        yield stream
        return
    for start in range(0, len(stream), size):
        yield stream[start : start + size]


def frames(stream: bytes) -> Iterator[tuple[int, int, bytes]]:
    """(type, channel, payload) of each complete, well-terminated frame after the protocol
    header; stops at the first that is not."""
    offset = 8 if stream.startswith(b"AMQP") else 0
    while len(stream) - offset >= 8:
        kind, channel, size = _FRAME_HEAD.unpack_from(stream, offset)
        end = offset + 7 + size
        if end >= len(stream) or stream[end] != 0xCE:
            return
        yield kind, channel, stream[offset + 7 : end]
        offset = end + 1
