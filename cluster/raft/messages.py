"""The messages Raft nodes exchange; plain frozen records so a transport can map them to
protobuf."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

from cluster.raft.types import Entry, Snapshot


@dataclass(frozen=True, slots=True)
class RequestVote:
    """A candidate asks for a vote; with `pre_vote` it only asks whether it could win at `term`."""

    src: str
    dst: str
    term: int
    last_index: int
    last_term: int
    pre_vote: bool = False
    # Sent on a leadership transfer: voters grant it even while they still hear from a leader.
    transfer: bool = False


@dataclass(frozen=True, slots=True)
class RequestVoteResponse:
    """A vote (or pre-vote) granted or refused."""

    src: str
    dst: str
    term: int
    granted: bool
    pre_vote: bool = False


@dataclass(frozen=True, slots=True)
class AppendEntries:
    """The leader replicates `entries`, which follow the entry (`prev_index`, `prev_term`)."""

    src: str
    dst: str
    term: int
    prev_index: int
    prev_term: int
    entries: tuple[Entry, ...]
    commit: int


@dataclass(frozen=True, slots=True)
class AppendEntriesResponse:
    """On success `index` is the last index known to match the leader's log.

    On refusal `index` is the refused `prev_index`, and (`hint_index`, `hint_term`) is the
    follower's best guess of where the logs might still agree, so the leader skips back fast.
    """

    src: str
    dst: str
    term: int
    success: bool
    index: int
    hint_index: int = 0
    hint_term: int = 0


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """Keeps followers from campaigning; `context` numbers the round for ReadIndex."""

    src: str
    dst: str
    term: int
    # Never beyond what this follower is known to hold, so it can commit it blindly.
    commit: int
    context: int
    # The leader's whole log is on every follower and committed: the group may go quiet.
    quiesce: bool = False


@dataclass(frozen=True, slots=True)
class HeartbeatResponse:
    """Acknowledges the heartbeat round `context`."""

    src: str
    dst: str
    term: int
    context: int
    # The commit index this follower went quiet at, answering a quiescing heartbeat (else 0).
    quiet_at: int = 0


@dataclass(frozen=True, slots=True)
class InstallSnapshot:
    """The leader sends its snapshot to a follower whose missing entries it has compacted."""

    src: str
    dst: str
    term: int
    snapshot: Snapshot


@dataclass(frozen=True, slots=True)
class TimeoutNow:
    """Tells the target of a leadership transfer to campaign at once."""

    src: str
    dst: str
    term: int


Message: TypeAlias = (
    RequestVote
    | RequestVoteResponse
    | AppendEntries
    | AppendEntriesResponse
    | Heartbeat
    | HeartbeatResponse
    | InstallSnapshot
    | TimeoutNow
)
