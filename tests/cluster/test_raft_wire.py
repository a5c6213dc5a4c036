"""Raft messages survive the trip through protobuf unchanged."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cluster.raft import (
    AppendEntries,
    AppendEntriesResponse,
    Entry,
    EntryKind,
    Heartbeat,
    HeartbeatResponse,
    InstallSnapshot,
    Message,
    RequestVote,
    RequestVoteResponse,
    Snapshot,
    TimeoutNow,
)
from cluster.raft_wire import MalformedBatch, decode_batch, encode_batch
from proto import raft_pb2

SRC, DST = "n1@localhost", "n2@localhost"
counts = st.integers(min_value=0, max_value=2**63 - 1)
entries = st.builds(Entry, counts, counts, st.sampled_from(list(EntryKind)), st.binary(max_size=64))
snapshots = st.builds(
    Snapshot,
    counts,
    counts,
    st.lists(st.text(min_size=1, max_size=8), max_size=5).map(tuple),
    st.binary(max_size=64),
)
messages: st.SearchStrategy[Message] = st.one_of(
    st.builds(
        RequestVote,
        st.just(SRC),
        st.just(DST),
        counts,
        counts,
        counts,
        st.booleans(),
        st.booleans(),
    ),
    st.builds(
        RequestVoteResponse, st.just(SRC), st.just(DST), counts, st.booleans(), st.booleans()
    ),
    st.builds(
        AppendEntries,
        st.just(SRC),
        st.just(DST),
        counts,
        counts,
        counts,
        st.lists(entries, max_size=4).map(tuple),
        counts,
    ),
    st.builds(
        AppendEntriesResponse,
        st.just(SRC),
        st.just(DST),
        counts,
        st.booleans(),
        counts,
        counts,
        counts,
    ),
    st.builds(Heartbeat, st.just(SRC), st.just(DST), counts, counts, counts),
    st.builds(HeartbeatResponse, st.just(SRC), st.just(DST), counts, counts),
    st.builds(InstallSnapshot, st.just(SRC), st.just(DST), counts, snapshots),
    st.builds(TimeoutNow, st.just(SRC), st.just(DST), counts),
)


@given(st.lists(messages, max_size=6))
def test_a_batch_round_trips(batch: list[Message]) -> None:
    wire = encode_batch(SRC, DST, batch)
    again = raft_pb2.RaftBatch.FromString(wire.SerializeToString())
    assert decode_batch(again) == batch


def test_a_message_for_another_pair_is_refused() -> None:
    with pytest.raises(ValueError, match="batch"):
        encode_batch(SRC, DST, [TimeoutNow(DST, SRC, 1)])


def test_an_empty_message_is_malformed() -> None:
    batch = raft_pb2.RaftBatch(src=SRC, dst=DST)
    batch.messages.add()
    with pytest.raises(MalformedBatch):
        decode_batch(batch)
