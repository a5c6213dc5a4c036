"""Why a cluster operation failed, in words an operator can act on."""

from __future__ import annotations


class ClusterError(Exception):
    """Base of the errors the cluster layer raises to its callers."""


class ClusterUnavailable(ClusterError):
    """The operation cannot be done now; `kind` is "no_quorum", "timeout", "rejected",
    "removed" or "unreachable" (also carried over the wire between nodes)."""

    kind = "unavailable"

    def __init__(self, reason: str, kind: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        if kind is not None:
            self.kind = kind


class NoQuorum(ClusterUnavailable):
    """A majority of the members cannot be reached, so metadata cannot change."""

    kind = "no_quorum"


class NotLeaderHere(ClusterError):
    """This node is not the leader; `leader` (and where it listens) if it knows one."""

    def __init__(self, leader: str | None, leader_address: str | None) -> None:
        super().__init__(f"not the leader (the leader is {leader or 'unknown'})")
        self.leader = leader
        self.leader_address = leader_address


class ProposalLost(ClusterError):
    """A proposal was overwritten by another leader's entry: it was never applied (safe to
    send again)."""


class OutcomeUnknown(ClusterError):
    """The command may or may not have been applied (its reply was lost)."""
