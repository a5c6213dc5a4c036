"""Encoding outgoing frames, with a hand-tuned path for deliveries."""

from __future__ import annotations

import struct

from .constants import FRAME_BODY, FRAME_END_BYTE, FRAME_HEADER, FRAME_METHOD, FRAME_OVERHEAD
from .methods import Method

_FRAME_HEAD = struct.Struct(">BHI")
_PACK_HEAD = _FRAME_HEAD.pack
HEARTBEAT_FRAME = b"\x08\x00\x00\x00\x00\x00\x00\xce"

# basic.deliver = class 60, method 60
_DELIVER_IDS = struct.pack(">HH", 60, 60)
_GET_OK_IDS = struct.pack(">HH", 60, 71)
_PACK_Q = struct.Struct(">Q").pack
_PACK_QB = struct.Struct(">QB").pack
_PACK_I = struct.Struct(">I").pack


def method_frame(channel: int, method: Method) -> bytes:
    payload = method.encode()
    return _PACK_HEAD(FRAME_METHOD, channel, len(payload)) + payload + FRAME_END_BYTE


def content_frames(
    channel: int, method_payload: bytes, header_payload: bytes, body: bytes, frame_max: int
) -> bytes:
    """Method, header and body frames of one message, as one buffer for one write."""
    parts: list[bytes | memoryview] = [
        _PACK_HEAD(FRAME_METHOD, channel, len(method_payload)),
        method_payload,
        FRAME_END_BYTE,
    ]
    _add_content(parts, channel, header_payload, body, frame_max)
    return b"".join(parts)


def framed_content(channel: int, header_payload: bytes, body: bytes, frame_max: int) -> bytes:
    """The header and body frames of one message: what follows its basic.deliver."""
    parts: list[bytes | memoryview] = []
    _add_content(parts, channel, header_payload, body, frame_max)
    return b"".join(parts)


def _add_content(
    parts: list[bytes | memoryview],
    channel: int,
    header_payload: bytes,
    body: bytes,
    frame_max: int,
) -> None:
    parts += (
        _PACK_HEAD(FRAME_HEADER, channel, len(header_payload)),
        header_payload,
        FRAME_END_BYTE,
    )
    size = len(body)
    if size:
        chunk = frame_max - FRAME_OVERHEAD
        if size <= chunk:
            parts += (_PACK_HEAD(FRAME_BODY, channel, size), body, FRAME_END_BYTE)
        else:
            view = memoryview(body)
            for start in range(0, size, chunk):
                piece = view[start : start + chunk]
                parts += (_PACK_HEAD(FRAME_BODY, channel, len(piece)), piece, FRAME_END_BYTE)


def _deliver_payload(
    consumer_tag: bytes, delivery_tag: int, redelivered: bool, exchange_and_key: bytes
) -> bytes:
    return b"".join(
        (
            _DELIVER_IDS,
            consumer_tag,
            _PACK_QB(delivery_tag, 1 if redelivered else 0),
            exchange_and_key,
        )
    )


def deliver_frames(
    channel: int,
    consumer_tag: bytes,
    delivery_tag: int,
    redelivered: bool,
    exchange_and_key: bytes,
    header_payload: bytes,
    body: bytes,
    frame_max: int,
) -> bytes:
    """basic.deliver with content. consumer_tag and exchange_and_key are pre-encoded shortstrs."""
    method_payload = _deliver_payload(consumer_tag, delivery_tag, redelivered, exchange_and_key)
    return content_frames(channel, method_payload, header_payload, body, frame_max)


def deliver_framed(
    channel: int,
    consumer_tag: bytes,
    delivery_tag: int,
    redelivered: bool,
    exchange_and_key: bytes,
    content: bytes,
) -> bytes:
    """basic.deliver followed by content already framed for `channel` (framed_content)."""
    # One join for the whole: the method payload is the ids, the tags and the redelivered bit.
    return b"".join(
        (
            _PACK_HEAD(FRAME_METHOD, channel, 13 + len(consumer_tag) + len(exchange_and_key)),
            _DELIVER_IDS,
            consumer_tag,
            _PACK_QB(delivery_tag, 1 if redelivered else 0),
            exchange_and_key,
            FRAME_END_BYTE,
            content,
        )
    )


def get_ok_frames(
    channel: int,
    delivery_tag: int,
    redelivered: bool,
    exchange_and_key: bytes,
    message_count: int,
    header_payload: bytes,
    body: bytes,
    frame_max: int,
) -> bytes:
    method_payload = b"".join(
        (
            _GET_OK_IDS,
            _PACK_QB(delivery_tag, 1 if redelivered else 0),
            exchange_and_key,
            _PACK_I(message_count),
        )
    )
    return content_frames(channel, method_payload, header_payload, body, frame_max)


def shortstr(value: str) -> bytes:
    raw = value.encode("utf-8")
    return bytes((len(raw),)) + raw
