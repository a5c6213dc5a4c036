"""Length-prefixed frames of a node-to-node byte stream, without IO: bytes in, frames out.

A stream is a sequence of protobuf length-delimited fields: a tag (field number, wire type 2),
a varint length, then that many bytes. Written that way, a whole batch of frames is one
protobuf message serialized in one go (a `repeated` field of the stream's wrapper message), so
the sender never copies a message body to put a length in front of it; the reader takes the
stream apart frame by frame as bytes arrive.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

# A frame's payload is parsed straight from the reader's buffer (protobuf copies what it keeps).
Parser = Callable[[memoryview], Any]

# Wire type 2 (length-delimited) in the low three bits of a tag.
_LENGTH_DELIMITED = 2
# A tag and a length are varints of at most this many bytes for the sizes allowed here.
_MAX_VARINT_BYTES = 5


class FrameError(Exception):
    """The stream is not a sequence of frames within the limits: the connection must close."""


class FrameReader:
    """Collects a stream's bytes and hands out whole frames as (field number, parsed message).

    `parsers` names the fields a frame may be in, and how each is parsed. The reader never
    holds more than one frame of at most `max_frame` bytes plus the bytes fed after it: a
    length above the limit fails at once, before anything of the frame is kept.
    """

    def __init__(self, max_frame: int, parsers: Mapping[int, Parser]) -> None:
        self.max_frame = max_frame
        self._parsers = dict(parsers)
        self._buffer = bytearray()
        self._start = 0  # where the next frame begins in _buffer

    def expect(self, max_frame: int, parsers: Mapping[int, Parser]) -> None:
        """From the next frame on, other fields and another limit (a handshake is over)."""
        self.max_frame = max_frame
        self._parsers = dict(parsers)

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        buffer = self._buffer
        if self._start:
            del buffer[: self._start]
            self._start = 0
        buffer += data

    def next_frame(self) -> tuple[int, Any] | None:
        """The next whole frame, parsed, or None until more bytes come; raises FrameError (a
        payload its parser refuses is one too)."""
        buffer, start = self._buffer, self._start
        size = len(buffer)
        header = _short_header(buffer, start, size)
        if header is not None:
            tag, length, position = header
            parser = self._parser(tag)
        else:
            whole_tag, position = _varint(buffer, start)
            if whole_tag is None:
                return None
            tag = whole_tag
            parser = self._parser(tag)  # (before the length: a wrong tag fails at once)
            whole_length, position = _varint(buffer, position)
            if whole_length is None:
                return None
            length = whole_length
        if length > self.max_frame:
            raise FrameError(f"a frame of {length} bytes is over the limit of {self.max_frame}")
        end = position + length
        if size < end:
            return None
        self._start = end
        with memoryview(buffer) as view, view[position:end] as payload:
            try:
                return tag >> 3, parser(payload)
            except Exception as error:  # noqa: BLE001 - protobuf's DecodeError, or worse
                raise FrameError(f"a frame in field {tag >> 3} does not parse: {error}") from None

    def _parser(self, tag: int) -> Parser:
        parser = self._parsers.get(tag >> 3)
        if tag & 7 != _LENGTH_DELIMITED or parser is None:
            raise FrameError(f"unexpected frame tag {tag:#x}")
        return parser

    @property
    def buffered(self) -> int:
        """Bytes received and not yet handed out."""
        return len(self._buffer) - self._start


def _short_header(buffer: bytearray, start: int, size: int) -> tuple[int, int, int] | None:
    """The usual frame's tag, length and where its payload starts, read inline: a one-byte tag
    and a length below 16384 with a byte after them; None for any other (or a part of one)."""
    if start + 3 >= size:
        return None
    tag, first = buffer[start], buffer[start + 1]
    if tag >= 0x80:
        return None
    if first < 0x80:
        return tag, first, start + 2
    second = buffer[start + 2]
    if second >= 0x80:
        return None
    return tag, first & 0x7F | second << 7, start + 3


def _varint(buffer: bytearray, position: int) -> tuple[int | None, int]:
    """The varint at `position` and the position after it; (None, position) when incomplete."""
    value = 0
    for index in range(_MAX_VARINT_BYTES):
        if position + index >= len(buffer):
            return None, position
        byte = buffer[position + index]
        value |= (byte & 0x7F) << (7 * index)
        if not byte & 0x80:
            return value, position + index + 1
    raise FrameError("a frame header is too long")


def frame_header(field: int, length: int) -> bytes:
    """The tag and length that precede a payload of `length` bytes in field `field`."""
    return _encode_varint(field << 3 | _LENGTH_DELIMITED) + _encode_varint(length)


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
