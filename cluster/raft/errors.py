"""Why the Raft core refuses a request from its caller."""

from __future__ import annotations


class RaftError(Exception):
    """Base of the errors the Raft core raises to its caller."""


class NotLeader(RaftError):
    """The request needs the leader; `leader` is the leader this node knows of, if any."""

    def __init__(self, leader: str | None) -> None:
        super().__init__(f"not the leader (leader is {leader!r})")
        self.leader = leader


class ProposalRejected(RaftError):
    """The leader cannot take this proposal now (a transfer or membership change is under way)."""
