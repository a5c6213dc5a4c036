"""Encoding and decoding of AMQP field values and tables, with RabbitMQ's type letters."""

from __future__ import annotations

import datetime
import struct
from decimal import Decimal
from typing import Any

from .errors import AMQPError, ReplyCode

FieldTable = dict[str, Any]

_UNPACK_B = struct.Struct(">B").unpack_from
_UNPACK_b = struct.Struct(">b").unpack_from
_UNPACK_H = struct.Struct(">H").unpack_from
_UNPACK_h = struct.Struct(">h").unpack_from
_UNPACK_I = struct.Struct(">I").unpack_from
_UNPACK_i = struct.Struct(">i").unpack_from
_UNPACK_Q = struct.Struct(">Q").unpack_from
_UNPACK_q = struct.Struct(">q").unpack_from
_UNPACK_f = struct.Struct(">f").unpack_from
_UNPACK_d = struct.Struct(">d").unpack_from
_PACK_I = struct.Struct(">I").pack


class WireInt(int):
    """An integer that came with a width other than signed 32 bits (the default for an int
    made here): it goes back out as it came, as RabbitMQ keeps each header's type when it
    rewrites headers (dead-lettering, BCC, direct reply-to). A Java client reads an 'l' as a
    Long and an 'I' as an Integer, and casts one to the other at its peril."""

    __slots__ = ()
    letter = b"I"
    _pack = struct.Struct(">i").pack

    def encode(self) -> bytes:
        return self.letter + self._pack(self)


class Byte(WireInt):
    __slots__ = ()
    letter, _pack = b"b", struct.Struct(">b").pack


class UnsignedByte(WireInt):
    __slots__ = ()
    letter, _pack = b"B", struct.Struct(">B").pack


class Short(WireInt):
    __slots__ = ()
    letter, _pack = b"s", struct.Struct(">h").pack


class UnsignedShort(WireInt):
    __slots__ = ()
    letter, _pack = b"u", struct.Struct(">H").pack


class UnsignedInt(WireInt):
    __slots__ = ()
    letter, _pack = b"i", struct.Struct(">I").pack


class Long(WireInt):
    __slots__ = ()
    letter, _pack = b"l", struct.Struct(">q").pack


class Float32(float):
    """A float that came as 'f' (single precision), and goes back out as one."""

    __slots__ = ()


class LongBytes(bytes):
    """A long string ('S') that is not UTF-8: bytes here, and an 'S' again when it goes back
    out (RabbitMQ's long strings are binaries and keep their type), not a byte array ('x')."""

    __slots__ = ()


class DecodeError(Exception):
    """Raised when bytes do not form a valid value; callers map it to a protocol error."""


def syntax_error(text: str) -> AMQPError:
    return AMQPError(ReplyCode.SYNTAX_ERROR, text)


def decode_shortstr(buf: bytes, offset: int) -> tuple[str, int]:
    length = buf[offset]
    end = offset + 1 + length
    if end > len(buf):
        raise DecodeError("short string overruns buffer")
    try:
        return buf[offset + 1 : end].decode("utf-8"), end
    except UnicodeDecodeError as exc:
        raise DecodeError("short string is not UTF-8") from exc


def decode_longstr_bytes(buf: bytes, offset: int) -> tuple[bytes, int]:
    (length,) = _UNPACK_I(buf, offset)
    start = offset + 4
    end = start + length
    if end > len(buf):
        raise DecodeError("long string overruns buffer")
    return bytes(buf[start:end]), end


def _decode_longstr_value(buf: bytes, offset: int) -> tuple[str | bytes, int]:
    raw, end = decode_longstr_bytes(buf, offset)
    try:
        return raw.decode("utf-8"), end
    except UnicodeDecodeError:
        return LongBytes(raw), end


def decode_value(buf: bytes, offset: int, depth: int = 0) -> tuple[Any, int]:
    """Decode one typed field value starting at its type letter."""
    kind = buf[offset]
    offset += 1
    if kind == 0x53:  # 'S'
        return _decode_longstr_value(buf, offset)
    if kind == 0x49:  # 'I'
        return _UNPACK_i(buf, offset)[0], offset + 4
    if kind == 0x46:  # 'F'
        return decode_table(buf, offset, depth + 1)
    if kind == 0x74:  # 't'
        return buf[offset] != 0, offset + 1
    if kind == 0x6C:  # 'l'
        return Long(_UNPACK_q(buf, offset)[0]), offset + 8
    if kind == 0x41:  # 'A'
        return _decode_array(buf, offset, depth + 1)
    if kind == 0x62:  # 'b'
        return Byte(_UNPACK_b(buf, offset)[0]), offset + 1
    if kind == 0x42:  # 'B'
        return UnsignedByte(_UNPACK_B(buf, offset)[0]), offset + 1
    if kind == 0x73:  # 's'
        return Short(_UNPACK_h(buf, offset)[0]), offset + 2
    if kind == 0x75:  # 'u'
        return UnsignedShort(_UNPACK_H(buf, offset)[0]), offset + 2
    if kind == 0x69:  # 'i'
        return UnsignedInt(_UNPACK_I(buf, offset)[0]), offset + 4
    if kind == 0x4C:  # 'L': some clients send it; RabbitMQ reads it as a signed long, 'l'
        return Long(_UNPACK_q(buf, offset)[0]), offset + 8
    if kind == 0x66:  # 'f'
        return Float32(_UNPACK_f(buf, offset)[0]), offset + 4
    if kind == 0x64:  # 'd'
        return _UNPACK_d(buf, offset)[0], offset + 8
    if kind == 0x44:  # 'D'
        scale = buf[offset]
        (digits,) = _UNPACK_i(buf, offset + 1)
        return Decimal(digits).scaleb(-scale), offset + 5
    if kind == 0x54:  # 'T'
        (seconds,) = _UNPACK_Q(buf, offset)
        try:
            stamp = datetime.datetime.fromtimestamp(seconds, datetime.UTC)
        except (OverflowError, OSError, ValueError):
            stamp = seconds  # out of datetime's range: keep the raw integer
        return stamp, offset + 8
    if kind == 0x56:  # 'V'
        return None, offset
    if kind == 0x78:  # 'x'
        return decode_longstr_bytes(buf, offset)
    raise DecodeError(f"unknown field type {chr(kind)!r}")


_MAX_NESTING = 64


def decode_table(buf: bytes, offset: int, depth: int = 0) -> tuple[FieldTable, int]:
    if depth > _MAX_NESTING:
        raise DecodeError("field table nested too deeply")
    (length,) = _UNPACK_I(buf, offset)
    offset += 4
    end = offset + length
    if end > len(buf):
        raise DecodeError("field table overruns buffer")
    table: FieldTable = {}
    while offset < end:
        key, offset = decode_shortstr(buf, offset)
        table[key], offset = decode_value(buf, offset, depth)
    if offset != end:
        raise DecodeError("field table length mismatch")
    return table, end


class ArgumentTable(dict[str, Any]):
    """A method's argument table that remembers each value's wire type letter.

    RabbitMQ names those types in its error texts ("of type 'signedint'").
    """

    __slots__ = ("types",)

    def __init__(self) -> None:
        super().__init__()
        self.types: dict[str, str] = {}


def decode_argument_table(buf: bytes, offset: int) -> tuple[ArgumentTable, int]:
    (length,) = _UNPACK_I(buf, offset)
    offset += 4
    end = offset + length
    if end > len(buf):
        raise DecodeError("field table overruns buffer")
    table = ArgumentTable()
    while offset < end:
        key, offset = decode_shortstr(buf, offset)
        table.types[key] = chr(buf[offset])
        table[key], offset = decode_value(buf, offset, 1)
    if offset != end:
        raise DecodeError("field table length mismatch")
    return table, end


def argument_types(table: FieldTable) -> dict[str, str]:
    """Wire type letters of a decoded argument table ({} for a table made here)."""
    return getattr(table, "types", {})


def _decode_array(buf: bytes, offset: int, depth: int) -> tuple[list[Any], int]:
    if depth > _MAX_NESTING:
        raise DecodeError("field array nested too deeply")
    (length,) = _UNPACK_I(buf, offset)
    offset += 4
    end = offset + length
    if end > len(buf):
        raise DecodeError("field array overruns buffer")
    items: list[Any] = []
    while offset < end:
        value, offset = decode_value(buf, offset, depth)
        items.append(value)
    if offset != end:
        raise DecodeError("field array length mismatch")
    return items, end


def encode_shortstr(value: str | bytes) -> bytes:
    raw = value.encode("utf-8") if isinstance(value, str) else value
    if len(raw) > 255:
        raise ValueError("short string longer than 255 bytes")
    return bytes((len(raw),)) + raw


def encode_longstr(value: str | bytes) -> bytes:
    raw = value.encode("utf-8") if isinstance(value, str) else value
    return _PACK_I(len(raw)) + raw


def encode_value(value: Any) -> bytes:
    if isinstance(value, bool):
        return b"t\x01" if value else b"t\x00"
    if isinstance(value, WireInt):
        return value.encode()
    if isinstance(value, int):
        if -(2**31) <= value < 2**31:
            return b"I" + struct.pack(">i", value)
        return b"l" + struct.pack(">q", value)
    if isinstance(value, str):
        return b"S" + encode_longstr(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        letter = b"S" if type(value) is LongBytes else b"x"
        return letter + encode_longstr(bytes(value))
    if isinstance(value, dict):
        return b"F" + encode_table(value)
    if isinstance(value, (list, tuple)):
        inner = b"".join(encode_value(item) for item in value)
        return b"A" + _PACK_I(len(inner)) + inner
    if isinstance(value, Float32):
        return b"f" + struct.pack(">f", value)
    if isinstance(value, float):
        return b"d" + struct.pack(">d", value)
    if isinstance(value, Decimal):
        exponent = value.as_tuple().exponent
        scale = -int(exponent) if isinstance(exponent, int) and exponent < 0 else 0
        unscaled = int(value.scaleb(scale))
        return b"D" + struct.pack(">Bi", scale, unscaled)
    if isinstance(value, datetime.datetime):
        return b"T" + struct.pack(">Q", int(value.timestamp()))
    if value is None:
        return b"V"
    raise TypeError(f"cannot encode {type(value).__name__} in a field table")


def encode_table(table: FieldTable | None) -> bytes:
    if not table:
        return b"\x00\x00\x00\x00"
    inner = b"".join(encode_shortstr(key) + encode_value(value) for key, value in table.items())
    return _PACK_I(len(inner)) + inner
