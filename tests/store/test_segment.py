"""Frame encoding and the recovery scan: torn tails and bit flips are found where they start."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from leveret.store.errors import CorruptRecord
from leveret.store.segment import (
    FRAME_OVERHEAD,
    HEADER_SIZE,
    FileKind,
    ScanReport,
    decode_frame,
    file_header,
    frame,
    header_is_valid,
    scan_frames,
)

payloads = st.lists(st.binary(min_size=0, max_size=300), min_size=1, max_size=20)


def _build(parts: list[bytes]) -> tuple[bytes, list[int]]:
    data = bytearray(file_header(FileKind.QUEUE_SEGMENT))
    offsets = []
    for part in parts:
        offsets.append(len(data))
        data += frame(part)
    return bytes(data), offsets


def _scan(data: bytes) -> tuple[list[tuple[int, bytes]], ScanReport]:
    report = ScanReport()
    found = [(offset, bytes(payload)) for offset, payload in scan_frames(data, HEADER_SIZE, report)]
    return found, report


@given(payloads)
def test_frames_round_trip(parts: list[bytes]) -> None:
    data, offsets = _build(parts)
    found, report = _scan(data)
    assert found == list(zip(offsets, parts, strict=True))
    assert report.valid_end == len(data)
    assert report.damage is None and report.skipped == []
    for offset, part in zip(offsets, parts, strict=True):
        assert bytes(decode_frame(data[offset : offset + FRAME_OVERHEAD + len(part)])) == part


def test_truncation_at_every_byte_of_the_last_record_cuts_exactly_that_record() -> None:
    parts = [b"first record", b"second", b"the last record, which gets torn"]
    data, offsets = _build(parts)
    last = offsets[-1]
    for cut in range(last, len(data)):
        found, report = _scan(data[:cut])
        assert [payload for _, payload in found] == parts[:-1], cut
        assert report.valid_end == last, cut
        if cut > last:
            assert report.damage is not None, cut
        else:
            assert report.damage is None


def test_every_bit_flip_in_the_last_record_is_detected() -> None:
    parts = [b"a" * 40, b"b" * 40, b"c" * 40]
    data, offsets = _build(parts)
    last = offsets[-1]
    for position in range(last, len(data)):
        for bit in range(8):
            damaged = bytearray(data)
            damaged[position] ^= 1 << bit
            found, report = _scan(bytes(damaged))
            assert [payload for _, payload in found] == parts[:-1], (position, bit)
            assert report.valid_end == last
            assert report.damage is not None


def test_a_flipped_record_in_the_middle_is_skipped_and_what_follows_kept() -> None:
    parts = [b"a" * 40, b"b" * 40, b"c" * 40]
    data, offsets = _build(parts)
    damaged = bytearray(data)
    damaged[offsets[1] + FRAME_OVERHEAD + 5] ^= 0x10
    found, report = _scan(bytes(damaged))
    assert [payload for _, payload in found] == [parts[0], parts[2]]
    assert report.skipped == [offsets[1]]
    assert report.damage is None
    assert report.valid_end == len(data)


def test_a_huge_length_from_a_flipped_high_bit_is_damage_not_an_allocation() -> None:
    data, offsets = _build([b"x" * 10, b"y" * 10])
    damaged = bytearray(data)
    damaged[offsets[1] + 3] ^= 0x80
    found, report = _scan(bytes(damaged))
    assert [payload for _, payload in found] == [b"x" * 10]
    assert report.valid_end == offsets[1]


def test_decode_frame_rejects_damage() -> None:
    record = bytearray(frame(b"payload"))
    record[-1] ^= 1
    with pytest.raises(CorruptRecord):
        decode_frame(bytes(record))
    with pytest.raises(CorruptRecord):
        decode_frame(frame(b"payload")[:-1])


def test_headers_name_their_kind() -> None:
    assert header_is_valid(file_header(FileKind.MARKS), FileKind.MARKS)
    assert not header_is_valid(file_header(FileKind.MARKS), FileKind.QUEUE_SEGMENT)
    assert not header_is_valid(file_header(FileKind.MARKS)[:-1], FileKind.MARKS)
    assert not header_is_valid(b"XXXX" + file_header(FileKind.MARKS)[4:], FileKind.MARKS)
