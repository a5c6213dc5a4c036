"""The generator's hand-written parser finds every delivery and confirm, however reads split."""

from __future__ import annotations

import itertools
import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from bench import wire
from bench.client import NO_STAMP, _Protocol


def _deliver(tag: int, body: bytes, frame_body_max: int) -> bytes:
    method = wire.method_frame(
        1,
        wire.BASIC_DELIVER,
        wire.shortstr("ctag-1")
        + wire.UINT64.pack(tag)
        + wire.bits(False)
        + wire.shortstr("")
        + wire.shortstr("bench-queue"),
    )
    header_payload = struct.pack(">HHQH", 60, 0, len(body), 0)
    header_prefix = wire.FRAME_PREFIX.pack(wire.FRAME_HEADER, 1, len(header_payload))
    header = header_prefix + header_payload + wire.FRAME_END_BYTE
    sizes = [min(frame_body_max, len(body) - at) for at in range(0, len(body), frame_body_max)]
    return method + header + wire.body_frames(1, body, sizes)


def _confirm(tag: int, multiple: bool) -> bytes:
    return wire.method_frame(1, wire.BASIC_ACK, wire.UINT64.pack(tag) + wire.bits(multiple))


_message = st.tuples(
    st.one_of(st.none(), st.integers(min_value=0, max_value=2**62)),  # stamp, or a short body
    st.integers(min_value=0, max_value=300),  # padding after the stamp
    st.booleans(),  # a confirm frame follows
)


@settings(max_examples=200, deadline=None)
@given(
    messages=st.lists(_message, min_size=1, max_size=30),
    frame_body_max=st.integers(min_value=1, max_value=64),
    cuts=st.lists(st.integers(min_value=0, max_value=20_000), max_size=40),
)
def test_every_delivery_and_confirm_is_seen_in_order(
    messages: list[tuple[int | None, int, bool]],
    frame_body_max: int,
    cuts: list[int],
) -> None:
    stream = bytearray()
    expected_stamps: list[int] = []
    expected_confirms: list[tuple[int, bool, bool]] = []
    for tag, (stamp, padding, confirm) in enumerate(messages, start=1):
        if stamp is None:
            body = bytes(padding % 8)  # too short to carry a stamp
            expected_stamps.append(NO_STAMP)
        else:
            body = wire.UINT64.pack(stamp) + bytes(padding)
            # A first body frame shorter than a stamp cannot carry one either.
            expected_stamps.append(stamp if frame_body_max >= 8 else NO_STAMP)
        stream += _deliver(tag, body, frame_body_max)
        if confirm:
            stream += _confirm(tag, tag % 2 == 0)
            expected_confirms.append((tag, tag % 2 == 0, False))

    protocol = _Protocol()
    seen_tags: list[int] = []
    seen_stamps: list[int] = []
    seen_confirms: list[tuple[int, bool, bool]] = []

    def on_deliveries(_received_ns: int, tags: list[int], stamps: list[int]) -> None:
        seen_tags.extend(tags)
        seen_stamps.extend(stamps)

    protocol.on_deliveries = on_deliveries
    protocol.on_confirm = lambda tag, multiple, nack: seen_confirms.append((tag, multiple, nack))
    points = sorted({cut % (len(stream) + 1) for cut in cuts} | {0, len(stream)})
    for start, end in itertools.pairwise(points):
        protocol.data_received(bytes(stream[start:end]))

    assert protocol.closed is None
    assert seen_tags == list(range(1, len(messages) + 1))
    assert seen_stamps == expected_stamps
    assert seen_confirms == expected_confirms


def test_a_frame_without_its_end_octet_closes_the_connection() -> None:
    frame = bytearray(_confirm(1, False))
    frame[-1] = 0
    protocol = _Protocol()
    protocol.data_received(bytes(frame))
    assert protocol.closed is not None and protocol.closed.reply_code == 501
