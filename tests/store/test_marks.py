"""Delivery and ack marks are stored as runs of seqs."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from leveret.store.marks import MarkKind, decode_marks, encode_marks, runs


@given(st.lists(st.integers(0, 500), max_size=200))
def test_runs_cover_exactly_the_seqs(seqs: list[int]) -> None:
    found = runs(seqs)
    covered = [seq for first, count in found for seq in range(first, first + count)]
    assert covered == sorted(set(seqs))
    # Runs are maximal: two consecutive runs never touch.
    assert all(a[0] + a[1] < b[0] for a, b in itertools.pairwise(found))


def test_fifo_acks_collapse_to_one_run() -> None:
    assert runs(list(range(100, 1100))) == [(100, 1000)]


@given(st.sampled_from(list(MarkKind)), st.lists(st.integers(0, 2**40), max_size=50))
def test_marks_round_trip(kind: MarkKind, seqs: list[int]) -> None:
    encoded = runs(seqs)
    assert decode_marks(memoryview(encode_marks(kind, encoded))) == (kind, encoded)
