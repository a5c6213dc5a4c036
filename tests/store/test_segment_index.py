"""The per-segment bitmaps agree with a plain model through any sequence of operations."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from leveret.store.segment_index import SegmentIndex

operations = st.lists(
    st.tuples(st.sampled_from(["add", "deliver", "ack"]), st.integers(0, 40)), max_size=120
)


@given(st.integers(0, 2**40), operations)
def test_index_matches_a_model(base: int, script: list[tuple[str, int]]) -> None:
    index = SegmentIndex(1)
    present: set[int] = set()
    acked: set[int] = set()
    delivered: set[int] = set()
    highest = None
    for action, step in script:
        seq = base + step
        if action == "add":
            seq = (highest or base) + step + 1
            index.add(seq)
            present.add(seq)
            highest = seq
        elif action == "deliver":
            live = seq in present and seq not in acked
            changed = index.set_delivered(seq)
            assert changed == (live and seq not in delivered)
            if changed:
                delivered.add(seq)
        else:
            live = seq in present and seq not in acked
            assert index.set_acked(seq) == live
            if live:
                acked.add(seq)
        assert index.live == len(present - acked)
        assert index.records == len(present)
    for seq in range(base, (highest or base) + 2):
        assert index.is_live(seq) == (seq in present and seq not in acked)
        assert index.is_delivered(seq) == (seq in delivered)


def test_seqs_must_increase() -> None:
    index = SegmentIndex(1)
    index.add(10)
    with pytest.raises(ValueError):
        index.add(10)


def test_memory_is_bits_per_seq_not_per_message_size() -> None:
    index = SegmentIndex(1)
    for seq in range(1, 100_001):
        index.add(seq)
    assert index.memory_bytes() < 100_000
