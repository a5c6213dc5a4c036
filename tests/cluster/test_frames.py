"""The sans-IO frame reader of node-to-node data connections (cluster/frames.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cluster.frames import FrameError, FrameReader, frame_header
from proto import queues_pb2

PARSERS = {1: queues_pb2.Up.FromString, 2: queues_pb2.Hello.FromString}


def ups(*bodies: bytes) -> queues_pb2.ToHome:
    frames = queues_pb2.ToHome()
    for body in bodies:
        frames.up.add().publishes.add().body = body
    return frames


def drain(reader: FrameReader) -> list[tuple[int, object]]:
    frames = []
    while (frame := reader.next_frame()) is not None:
        frames.append(frame)
    return frames


@given(
    st.lists(st.binary(max_size=300), min_size=1, max_size=6),
    st.lists(st.integers(min_value=1, max_value=64), max_size=40),
)
def test_a_batch_serialized_in_one_go_comes_out_frame_by_frame_however_it_is_cut(
    bodies: list[bytes], cuts: list[int]
) -> None:
    data = ups(*bodies).SerializeToString()
    reader = FrameReader(1 << 20, PARSERS)
    got = []
    position = 0
    for size in [*cuts, len(data)]:
        reader.feed(data[position : position + size])
        position += size
        got += drain(reader)
    assert [field for field, _ in got] == [1] * len(bodies)
    assert [up.publishes[0].body for _, up in got] == bodies
    assert reader.buffered == 0


@pytest.mark.parametrize("size", [0, 100, 124, 125, 16_370, 16_380, 70_000])
def test_lengths_of_one_two_and_three_bytes_read_alike_whole_or_a_byte_at_a_time(
    size: int,
) -> None:
    body = bytes(range(256)) * (size // 256) + bytes(size % 256)
    data = ups(body, b"after").SerializeToString()
    whole = FrameReader(1 << 20, PARSERS)
    whole.feed(data)
    by_byte = FrameReader(1 << 20, PARSERS)
    got = []
    for index in range(len(data)):
        by_byte.feed(data[index : index + 1])
        got += drain(by_byte)
    for frames in (drain(whole), got):
        assert [up.publishes[0].body for _, up in frames] == [body, b"after"]


def test_the_header_is_what_protobuf_puts_before_a_field() -> None:
    hello = queues_pb2.Hello(node="n1@host")
    payload = hello.SerializeToString()
    assert frame_header(2, len(payload)) + payload == (
        queues_pb2.ToHome(hello=hello).SerializeToString()
    )


def test_a_length_over_the_limit_fails_before_the_frame_is_kept() -> None:
    reader = FrameReader(4096, PARSERS)
    reader.feed(frame_header(1, 4097))
    with pytest.raises(FrameError, match="over the limit"):
        reader.next_frame()


def test_a_field_it_does_not_expect_fails() -> None:
    reader = FrameReader(4096, {2: queues_pb2.Hello.FromString})
    reader.feed(ups(b"x").SerializeToString())
    with pytest.raises(FrameError, match="unexpected frame tag"):
        reader.next_frame()


def test_a_varint_that_never_ends_fails() -> None:
    reader = FrameReader(4096, PARSERS)
    reader.feed(b"\x0a" + b"\xff" * 8)
    with pytest.raises(FrameError, match="too long"):
        reader.next_frame()


def test_a_payload_that_does_not_parse_fails() -> None:
    reader = FrameReader(4096, PARSERS)
    reader.feed(frame_header(1, 3) + b"\xff\xff\xff")
    with pytest.raises(FrameError, match="does not parse"):
        reader.next_frame()


def test_expect_changes_the_fields_and_the_limit_from_the_next_frame() -> None:
    reader = FrameReader(16, {2: queues_pb2.Hello.FromString})
    hello = queues_pb2.ToHome(hello=queues_pb2.Hello(node="a")).SerializeToString()
    reader.feed(hello + ups(b"y" * 100).SerializeToString())
    assert reader.next_frame() == (2, queues_pb2.Hello(node="a"))
    reader.expect(1 << 20, {1: queues_pb2.Up.FromString})
    frame = reader.next_frame()
    assert frame is not None and frame[1].publishes[0].body == b"y" * 100
