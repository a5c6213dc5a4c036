"""The counting proxy's parser counts each method frame once, however the stream is split."""

from __future__ import annotations

import pytest

from bench import wire
from bench.amqp_proxy import BASIC_CANCEL, BASIC_CONSUME, MethodCounter


def _stream() -> bytes:
    consume = wire.basic_consume(1, "q", "link", no_ack=False)
    cancel = wire.method_frame(1, BASIC_CANCEL, wire.shortstr("link") + wire.bits(False))
    heartbeat = bytes((wire.FRAME_HEARTBEAT, 0, 0, 0, 0, 0, 0, wire.FRAME_END))
    ack = wire.basic_ack(1, 7, False)
    return wire.PROTOCOL_HEADER + consume + heartbeat + cancel + ack + consume


def test_whole_stream_at_once() -> None:
    counter = MethodCounter()
    counter.feed(_stream())
    assert counter.methods[BASIC_CONSUME] == 2
    assert counter.methods[BASIC_CANCEL] == 1
    assert counter.methods[0x003C0050] == 1  # basic.ack
    assert sum(counter.methods.values()) == 4  # the heartbeat is no method


@pytest.mark.parametrize("size", [1, 3, 7, 8, 9, 13])
def test_frames_split_across_reads(size: int) -> None:
    stream = _stream()
    counter = MethodCounter()
    for start in range(0, len(stream), size):
        counter.feed(stream[start : start + size])
    assert (counter.methods[BASIC_CONSUME], counter.methods[BASIC_CANCEL]) == (2, 1)


def test_nothing_counted_until_a_frame_is_whole() -> None:
    consume = wire.basic_consume(1, "q", "link", no_ack=False)
    counter = MethodCounter()
    counter.feed(wire.PROTOCOL_HEADER + consume[:-1])
    assert counter.methods[BASIC_CONSUME] == 0
    counter.feed(consume[-1:])
    assert counter.methods[BASIC_CONSUME] == 1


def test_a_missing_frame_end_is_an_error() -> None:
    broken = bytearray(wire.basic_consume(1, "q", "link", no_ack=False))
    broken[-1] = 0
    with pytest.raises(ValueError, match="frame end"):
        MethodCounter().feed(wire.PROTOCOL_HEADER + bytes(broken))
