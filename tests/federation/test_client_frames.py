"""The federation link's AMQP client reading what an upstream sends: whole deliveries however
the bytes are cut, and a refusal (never an exception, never an unbounded buffer) for frames a
broken or hostile upstream might send."""

from __future__ import annotations

import asyncio
import struct
from typing import Any

from federation.client import _MAX_BODY, _MAX_FRAME, _Protocol
from leveret.amqp import methods as m
from leveret.amqp.constants import FRAME_BODY, FRAME_END, FRAME_HEADER, FRAME_METHOD
from leveret.amqp.frames import method_frame

CHANNEL = 1


class _Transport:
    def __init__(self) -> None:
        self.closed = False

    def write(self, data: bytes) -> None:
        pass

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed


def frame(kind: int, payload: bytes, channel: int = CHANNEL) -> bytes:
    return struct.pack(">BHI", kind, channel, len(payload)) + payload + bytes([FRAME_END])


def payload(method: m.Method) -> bytes:
    """A method frame's payload (class and method ids, then the arguments)."""
    return bytes(method_frame(CHANNEL, method)[7:-1])


def deliver(tag: int, routing_key: str = "jobs") -> bytes:
    return frame(FRAME_METHOD, payload(m.BasicDeliver("ctag", tag, True, "ex", routing_key)))


def header(size: int) -> bytes:
    return frame(FRAME_HEADER, struct.pack(">HHQH", 60, 0, size, 0))


def read(chunks: list[bytes]) -> tuple[list[tuple[Any, ...]], str | None, bool]:
    """Feed `chunks` to a client; the deliveries, the refusal (if any), whether it hung up."""

    async def run() -> tuple[list[tuple[Any, ...]], str | None, bool]:
        protocol = _Protocol()
        transport = _Transport()
        protocol.connection_made(transport)  # type: ignore[arg-type]
        protocol.channel = CHANNEL
        protocol.handshaking = False
        delivered: list[tuple[Any, ...]] = []
        protocol.on_delivery = lambda *fields: delivered.append(fields)
        for chunk in chunks:
            protocol.data_received(chunk)
        refusal = protocol.closed.result().reply_text if protocol.closed.done() else None
        assert len(protocol._buffer) <= _MAX_FRAME + 8
        return delivered, refusal, transport.closed

    return asyncio.run(run())


def test_deliveries_come_whole_however_the_bytes_are_cut() -> None:
    stream = deliver(7) + header(5) + frame(FRAME_BODY, b"he") + frame(FRAME_BODY, b"llo")
    stream += deliver(8, "other") + header(0)
    for cut in range(1, len(stream)):
        delivered, refusal, _ = read([stream[:cut], stream[cut:]])
        assert refusal is None
        assert [(d[0], d[1], d[2], d[3], d[5]) for d in delivered] == [
            (7, True, "ex", "jobs", b"hello"),
            (8, True, "ex", "other", b""),
        ]
    one_byte_at_a_time = [stream[i : i + 1] for i in range(len(stream))]
    assert len(read(one_byte_at_a_time)[0]) == 2


def test_broken_or_hostile_frames_end_the_connection() -> None:
    cases = {
        "an announced frame above frame_max": struct.pack(">BHI", FRAME_BODY, CHANNEL, 2**31)
        + b"\x00",
        "a body without a delivery": frame(FRAME_BODY, b"x"),
        "a header without a delivery": header(1),
        "a method inside a message": deliver(1) + header(3) + deliver(2),
        "a body longer than announced": deliver(1) + header(1) + frame(FRAME_BODY, b"xy"),
        "a message above the largest": deliver(1) + header(_MAX_BODY + 1),
        "a truncated basic.deliver": frame(FRAME_METHOD, payload(m.BasicDeliver("t", 1))[:9]),
        "a missing frame end": frame(FRAME_BODY, b"x")[:-1] + b"\x00" + b"\x00" * 8,
    }
    for what, data in cases.items():
        delivered, refusal, hung_up = read([data])
        assert refusal is not None and "protocol error" in refusal, what
        assert hung_up, what
        assert delivered == [], what
