"""Raft messages on the wire: the core's message records to and from their protobuf form."""

from __future__ import annotations

from collections.abc import Sequence

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
from proto import raft_pb2


class MalformedBatch(ValueError):
    """A batch a peer sent that does not describe Raft messages."""


def encode_batch(src: str, dst: str, messages: Sequence[Message]) -> raft_pb2.RaftBatch:
    """One batch of messages that all go from `src` to `dst`."""
    batch = raft_pb2.RaftBatch(src=src, dst=dst)
    for message in messages:
        if message.src != src or message.dst != dst:
            raise ValueError(f"message {message.src}->{message.dst} in a {src}->{dst} batch")
        _encode_into(batch.messages.add(), message)
    return batch


def decode_batch(batch: raft_pb2.RaftBatch) -> list[Message]:
    """The messages of a batch, in order."""
    return [_decode(batch.src, batch.dst, item) for item in batch.messages]


def _entry(entry: Entry) -> raft_pb2.Entry:
    return raft_pb2.Entry(index=entry.index, term=entry.term, kind=entry.kind.name, data=entry.data)


def _snapshot(snapshot: Snapshot) -> raft_pb2.Snapshot:
    return raft_pb2.Snapshot(
        index=snapshot.index, term=snapshot.term, voters=list(snapshot.voters), data=snapshot.data
    )


def _encode_into(out: raft_pb2.RaftMessage, m: Message) -> None:
    if isinstance(m, RequestVote):
        out.request_vote.CopyFrom(
            raft_pb2.RequestVote(
                term=m.term,
                last_index=m.last_index,
                last_term=m.last_term,
                pre_vote=m.pre_vote,
                transfer=m.transfer,
            )
        )
    elif isinstance(m, RequestVoteResponse):
        out.request_vote_response.CopyFrom(
            raft_pb2.RequestVoteResponse(term=m.term, granted=m.granted, pre_vote=m.pre_vote)
        )
    elif isinstance(m, AppendEntries):
        body = out.append_entries
        body.term, body.prev_index, body.prev_term, body.commit = (
            m.term,
            m.prev_index,
            m.prev_term,
            m.commit,
        )
        body.entries.extend(_entry(entry) for entry in m.entries)
    elif isinstance(m, AppendEntriesResponse):
        out.append_entries_response.CopyFrom(
            raft_pb2.AppendEntriesResponse(
                term=m.term,
                success=m.success,
                index=m.index,
                hint_index=m.hint_index,
                hint_term=m.hint_term,
            )
        )
    elif isinstance(m, Heartbeat):
        out.heartbeat.CopyFrom(
            raft_pb2.Heartbeat(term=m.term, commit=m.commit, context=m.context, quiesce=m.quiesce)
        )
    elif isinstance(m, HeartbeatResponse):
        out.heartbeat_response.CopyFrom(
            raft_pb2.HeartbeatResponse(term=m.term, context=m.context, quiet_at=m.quiet_at)
        )
    elif isinstance(m, InstallSnapshot):
        out.install_snapshot.CopyFrom(
            raft_pb2.InstallSnapshot(term=m.term, snapshot=_snapshot(m.snapshot))
        )
    elif isinstance(m, TimeoutNow):
        out.timeout_now.CopyFrom(raft_pb2.TimeoutNow(term=m.term))
    else:
        raise TypeError(f"not a Raft message: {m!r}")


def _decode(src: str, dst: str, item: raft_pb2.RaftMessage) -> Message:
    kind = item.WhichOneof("body")
    if kind == "request_vote":
        rv = item.request_vote
        return RequestVote(
            src,
            dst,
            rv.term,
            rv.last_index,
            rv.last_term,
            pre_vote=rv.pre_vote,
            transfer=rv.transfer,
        )
    if kind == "request_vote_response":
        rr = item.request_vote_response
        return RequestVoteResponse(src, dst, rr.term, rr.granted, pre_vote=rr.pre_vote)
    if kind == "append_entries":
        ae = item.append_entries
        entries = tuple(_decode_entry(entry) for entry in ae.entries)
        return AppendEntries(src, dst, ae.term, ae.prev_index, ae.prev_term, entries, ae.commit)
    if kind == "append_entries_response":
        ar = item.append_entries_response
        return AppendEntriesResponse(
            src,
            dst,
            ar.term,
            ar.success,
            ar.index,
            hint_index=ar.hint_index,
            hint_term=ar.hint_term,
        )
    if kind == "heartbeat":
        hb = item.heartbeat
        return Heartbeat(src, dst, hb.term, hb.commit, hb.context, hb.quiesce)
    if kind == "heartbeat_response":
        hr = item.heartbeat_response
        return HeartbeatResponse(src, dst, hr.term, hr.context, hr.quiet_at)
    if kind == "install_snapshot":
        snap = item.install_snapshot.snapshot
        snapshot = Snapshot(snap.index, snap.term, tuple(snap.voters), snap.data)
        return InstallSnapshot(src, dst, item.install_snapshot.term, snapshot)
    if kind == "timeout_now":
        return TimeoutNow(src, dst, item.timeout_now.term)
    raise MalformedBatch(f"a Raft message without a body from {src}")


def _decode_entry(entry: raft_pb2.Entry) -> Entry:
    try:
        kind = EntryKind(entry.kind)
    except ValueError:
        raise MalformedBatch(f"unknown entry kind {entry.kind}") from None
    return Entry(entry.index, entry.term, kind, entry.data)
