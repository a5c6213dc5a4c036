"""Byte-level AMQP 0-9-1 for the load generator: only the frames and fields it exchanges."""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

FRAME_METHOD = 1
FRAME_HEADER = 2
FRAME_BODY = 3
FRAME_HEARTBEAT = 8
FRAME_END = 0xCE
FRAME_END_BYTE = b"\xce"
FRAME_HEADER_SIZE = 7  # type (1) + channel (2) + size (4)
PROTOCOL_HEADER = b"AMQP\x00\x00\x09\x01"

# (class id << 16 | method id), the first four bytes of a method frame's payload.
CONNECTION_START = 0x000A000A
CONNECTION_TUNE = 0x000A001E
CONNECTION_OPEN_OK = 0x000A0029
CONNECTION_CLOSE = 0x000A0032
CONNECTION_CLOSE_OK = 0x000A0033
CONNECTION_BLOCKED = 0x000A003C
CONNECTION_UNBLOCKED = 0x000A003D
CHANNEL_OPEN_OK = 0x0014000B
CHANNEL_CLOSE = 0x00140028
CHANNEL_CLOSE_OK = 0x00140029
EXCHANGE_DECLARE_OK = 0x0028000B
EXCHANGE_DELETE_OK = 0x00280015
QUEUE_DECLARE_OK = 0x0032000B
QUEUE_BIND_OK = 0x00320015
QUEUE_PURGE_OK = 0x0032001F
QUEUE_DELETE_OK = 0x00320029
BASIC_QOS_OK = 0x003C000B
BASIC_CONSUME_OK = 0x003C0015
BASIC_CANCEL = 0x003C001E
BASIC_RETURN = 0x003C0032
BASIC_DELIVER = 0x003C003C
BASIC_GET_OK = 0x003C0047
BASIC_GET_EMPTY = 0x003C0048
BASIC_ACK = 0x003C0050
BASIC_NACK = 0x003C0078
CONFIRM_SELECT_OK = 0x0055000B

FRAME_PREFIX = struct.Struct(">BHI")
METHOD_ID = struct.Struct(">I")
UINT64 = struct.Struct(">Q")
_UINT16 = struct.Struct(">H")
_UINT32 = struct.Struct(">I")
# A whole basic.ack frame: header, class/method, delivery tag, multiple bit, frame end.
BASIC_ACK_FRAME = struct.Struct(">BHIHHQBB")
_DELIVERY_MODE_FLAG = 0x1000
_PRIORITY_FLAG = 0x0800


def shortstr(value: str | bytes) -> bytes:
    raw = value.encode() if isinstance(value, str) else value
    if len(raw) > 255:
        raise ValueError(f"short string longer than 255 bytes: {raw[:40]!r}...")
    return bytes((len(raw),)) + raw


def longstr(value: str | bytes) -> bytes:
    raw = value.encode() if isinstance(value, str) else value
    return _UINT32.pack(len(raw)) + raw


def _field_value(value: Any) -> bytes:
    # bool before int: bool is an int subclass.
    if isinstance(value, bool):
        return b"t" + (b"\x01" if value else b"\x00")
    if isinstance(value, int):
        return b"l" + struct.pack(">q", value)
    if isinstance(value, (str, bytes)):
        return b"S" + longstr(value)
    if isinstance(value, Mapping):
        return b"F" + table(value)
    raise TypeError(f"cannot encode {type(value).__name__} in a field table")


def table(values: Mapping[str, Any]) -> bytes:
    body = b"".join(shortstr(key) + _field_value(value) for key, value in values.items())
    return longstr(body)


def method_frame(channel: int, method_id: int, arguments: bytes = b"") -> bytes:
    payload = METHOD_ID.pack(method_id) + arguments
    return FRAME_PREFIX.pack(FRAME_METHOD, channel, len(payload)) + payload + FRAME_END_BYTE


def bits(*flags: bool) -> bytes:
    octet = 0
    for position, flag in enumerate(flags):
        if flag:
            octet |= 1 << position
    return bytes((octet,))


def start_ok(user: str, password: str, client_properties: Mapping[str, Any]) -> bytes:
    response = b"\x00" + user.encode() + b"\x00" + password.encode()
    arguments = table(client_properties) + shortstr("PLAIN") + longstr(response) + shortstr("en_US")
    return method_frame(0, 0x000A000B, arguments)


def tune_ok(channel_max: int, frame_max: int, heartbeat: int) -> bytes:
    return method_frame(0, 0x000A001F, struct.pack(">HIH", channel_max, frame_max, heartbeat))


def connection_open(vhost: str) -> bytes:
    return method_frame(0, 0x000A0028, shortstr(vhost) + shortstr("") + bits(False))


def connection_close(reply_code: int = 200, reply_text: str = "Goodbye") -> bytes:
    # The last four bytes are the failing class and method ids: none.
    arguments = _UINT16.pack(reply_code) + shortstr(reply_text) + b"\0\0\0\0"
    return method_frame(0, CONNECTION_CLOSE, arguments)


def connection_close_ok() -> bytes:
    return method_frame(0, CONNECTION_CLOSE_OK)


def channel_open(channel: int) -> bytes:
    return method_frame(channel, 0x0014000A, shortstr(""))


def channel_close_ok(channel: int) -> bytes:
    return method_frame(channel, CHANNEL_CLOSE_OK)


def exchange_declare(channel: int, exchange: str, kind: str, *, durable: bool) -> bytes:
    flags = bits(False, durable, False, False, False)  # passive, durable, auto-delete, internal
    arguments = b"\0\0" + shortstr(exchange) + shortstr(kind) + flags + table({})
    return method_frame(channel, 0x0028000A, arguments)


def exchange_delete(channel: int, exchange: str) -> bytes:
    return method_frame(channel, 0x00280014, b"\0\0" + shortstr(exchange) + bits(False, False))


def queue_declare(
    channel: int,
    queue: str,
    *,
    durable: bool,
    exclusive: bool,
    auto_delete: bool,
    arguments: Mapping[str, Any],
    passive: bool = False,
) -> bytes:
    flags = bits(passive, durable, exclusive, auto_delete, False)
    return method_frame(channel, 0x0032000A, b"\0\0" + shortstr(queue) + flags + table(arguments))


def queue_bind(channel: int, queue: str, exchange: str, routing_key: str) -> bytes:
    address = b"\0\0" + shortstr(queue) + shortstr(exchange) + shortstr(routing_key)
    return method_frame(channel, 0x00320014, address + bits(False) + table({}))


def queue_purge(channel: int, queue: str) -> bytes:
    return method_frame(channel, 0x0032001E, b"\0\0" + shortstr(queue) + bits(False))


def queue_delete(channel: int, queue: str) -> bytes:
    return method_frame(channel, 0x00320028, b"\0\0" + shortstr(queue) + bits(False, False, False))


def basic_qos(channel: int, prefetch_count: int, global_: bool = False) -> bytes:
    return method_frame(channel, 0x003C000A, struct.pack(">IH", 0, prefetch_count) + bits(global_))


def basic_consume(channel: int, queue: str, consumer_tag: str, *, no_ack: bool) -> bytes:
    flags = bits(False, no_ack, False, False)  # no-local, no-ack, exclusive, no-wait
    arguments = b"\0\0" + shortstr(queue) + shortstr(consumer_tag) + flags + table({})
    return method_frame(channel, 0x003C0014, arguments)


def basic_get(channel: int, queue: str, *, no_ack: bool) -> bytes:
    return method_frame(channel, 0x003C0046, b"\0\0" + shortstr(queue) + bits(no_ack))


def confirm_select(channel: int) -> bytes:
    return method_frame(channel, 0x0055000A, bits(False))


def basic_ack(channel: int, delivery_tag: int, multiple: bool) -> bytes:
    return BASIC_ACK_FRAME.pack(
        FRAME_METHOD, channel, 13, 60, 80, delivery_tag, 1 if multiple else 0, FRAME_END
    )


def publish_template(
    channel: int,
    exchange: str,
    routing_key: str,
    body_size: int,
    *,
    persistent: bool,
    mandatory: bool,
    frame_max: int,
    priority: int | None = None,
) -> tuple[bytes, list[int]]:
    """Frames of one publish except the body bytes: (method + header frames, body frame sizes).

    The body is split over several body frames when it does not fit one frame of frame_max.
    """
    address = b"\0\0" + shortstr(exchange) + shortstr(routing_key)
    method = method_frame(channel, 0x003C0028, address + bits(mandatory, False))
    properties = _properties(persistent, priority)
    header_payload = struct.pack(">HHQ", 60, 0, body_size) + properties
    header_prefix = FRAME_PREFIX.pack(FRAME_HEADER, channel, len(header_payload))
    header = header_prefix + header_payload + FRAME_END_BYTE
    chunk = frame_max - FRAME_HEADER_SIZE - 1
    sizes = [min(chunk, body_size - offset) for offset in range(0, body_size, chunk)]
    return method + header, sizes


def _properties(persistent: bool, priority: int | None) -> bytes:
    # Property values follow the flags in flag order: delivery-mode before priority.
    flags = 0
    values = b""
    if persistent:
        flags |= _DELIVERY_MODE_FLAG
        values += b"\x02"
    if priority is not None:
        flags |= _PRIORITY_FLAG
        values += bytes((priority,))
    return _UINT16.pack(flags) + values


def body_frames(channel: int, body: bytes, sizes: list[int]) -> bytes:
    parts = []
    offset = 0
    for size in sizes:
        parts.append(FRAME_PREFIX.pack(FRAME_BODY, channel, size))
        parts.append(body[offset : offset + size])
        parts.append(FRAME_END_BYTE)
        offset += size
    return b"".join(parts)


class Reader:
    """Sequential reader of a method payload's fields (slow path: handshake and replies)."""

    def __init__(self, data: bytes, offset: int = 0) -> None:
        self._data = data
        self._offset = offset

    def octet(self) -> int:
        value = self._data[self._offset]
        self._offset += 1
        return value

    def short(self) -> int:
        (value,) = _UINT16.unpack_from(self._data, self._offset)
        self._offset += 2
        return int(value)

    def long(self) -> int:
        (value,) = _UINT32.unpack_from(self._data, self._offset)
        self._offset += 4
        return int(value)

    def longlong(self) -> int:
        (value,) = UINT64.unpack_from(self._data, self._offset)
        self._offset += 8
        return int(value)

    def shortstr(self) -> str:
        length = self.octet()
        raw = self._data[self._offset : self._offset + length]
        self._offset += length
        return raw.decode(errors="replace")

    def longstr(self) -> bytes:
        length = self.long()
        raw = self._data[self._offset : self._offset + length]
        self._offset += length
        return bytes(raw)

    def table(self) -> dict[str, Any]:
        end = self._offset + 4 + self.long()
        values: dict[str, Any] = {}
        while self._offset < end:
            key = self.shortstr()
            values[key] = self._field_value()
        return values

    def _field_value(self) -> Any:
        kind = chr(self.octet())
        fixed = {
            "b": ">b",
            "B": ">B",
            "s": ">h",
            "u": ">H",
            "I": ">i",
            "i": ">I",
            "l": ">q",
            "L": ">Q",
            "f": ">f",
            "d": ">d",
            "T": ">Q",
        }
        if kind in fixed:
            fmt = fixed[kind]
            (value,) = struct.unpack_from(fmt, self._data, self._offset)
            self._offset += struct.calcsize(fmt)
            return value
        if kind == "t":
            return self.octet() != 0
        if kind == "S" or kind == "x":
            raw = self.longstr()
            return raw.decode(errors="replace") if kind == "S" else raw
        if kind == "F":
            return self.table()
        if kind == "A":
            end = self._offset + 4 + self.long()
            items = []
            while self._offset < end:
                items.append(self._field_value())
            return items
        if kind == "D":
            scale = self.octet()
            return self.long() / (10**scale)
        if kind == "V":
            return None
        raise ValueError(f"unknown field type {kind!r}")
