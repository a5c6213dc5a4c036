"""The value types of the Raft core: log entries, hard state, snapshots and recovered storage."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum


class EntryKind(IntEnum):
    """What a log entry carries; only NORMAL entries hold application commands."""

    NORMAL = 0
    # Appended by every new leader so that it can commit an entry of its own term.
    NOOP = 1
    # A membership change, effective on each node as soon as it is appended to its log.
    CONF = 2


@dataclass(frozen=True, slots=True)
class Entry:
    """One log entry; `data` is opaque to Raft except for CONF entries."""

    index: int
    term: int
    kind: EntryKind = EntryKind.NORMAL
    data: bytes = b""


@dataclass(frozen=True, slots=True)
class HardState:
    """What a node must persist before it sends any message that depends on it."""

    term: int = 0
    vote: str | None = None
    commit: int = 0


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The application state up to and including `index`, plus the membership at that index."""

    index: int
    term: int
    voters: tuple[str, ...]
    data: bytes = b""


@dataclass(frozen=True, slots=True)
class StorageState:
    """What a node recovers from stable storage on start; empty for a brand-new node."""

    hard_state: HardState = field(default_factory=HardState)
    snapshot: Snapshot | None = None
    # Entries after the snapshot (or from index 1), contiguous.
    entries: tuple[Entry, ...] = ()
