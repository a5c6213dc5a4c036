"""The batch of work a Raft node hands to its caller after each call."""

from __future__ import annotations

from dataclasses import dataclass

from cluster.raft.messages import Message
from cluster.raft.types import Entry, HardState, Snapshot


@dataclass(frozen=True, slots=True)
class ReadState:
    """A ReadIndex answer: reads for `context` are linearizable once `index` is applied.

    `index` is None when the node lost leadership before it could confirm the read; retry it.
    """

    context: bytes
    index: int | None


@dataclass(frozen=True, slots=True)
class Ready:
    """What to do, in this order: persist (with fsync), then send, then apply.

    Persisting means: save `snapshot` and drop the entries it covers (and all entries, when the
    log does not hold the snapshot's last entry); drop the entries at and after `truncate_from`;
    append `entries`; save `hard_state` (`MemoryStorage` is the reference). Applying means: when
    `snapshot` is newer than the applied state, restore the state machine from it; then apply
    `committed` in order. Readies must be handled in the order they were returned; several may be
    persisted with one fsync before any of their messages go out.

    `early_messages` (only with `RaftConfig.parallel_leader_persist`) are a leader's appends,
    heartbeats, snapshots and transfer requests: they may go out before or while this batch is
    persisted. Once it is, the caller reports so with `RaftNode.persisted`.
    """

    hard_state: HardState | None = None
    entries: tuple[Entry, ...] = ()
    truncate_from: int | None = None
    snapshot: Snapshot | None = None
    messages: tuple[Message, ...] = ()
    committed: tuple[Entry, ...] = ()
    read_states: tuple[ReadState, ...] = ()
    early_messages: tuple[Message, ...] = ()

    @property
    def must_persist(self) -> bool:
        """Whether this batch has anything for stable storage."""
        return (
            self.hard_state is not None
            or bool(self.entries)
            or self.truncate_from is not None
            or self.snapshot is not None
        )

    @property
    def is_empty(self) -> bool:
        """Whether the caller has nothing to do for this batch."""
        return not (
            self.must_persist
            or self.messages
            or self.early_messages
            or self.committed
            or self.read_states
        )
