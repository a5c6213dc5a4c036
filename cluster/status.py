"""What a node knows about its cluster, and the same as `rabbitmqctl cluster_status` shows it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cluster.gossip import MemberStatus, MemberView


@dataclass(frozen=True, slots=True)
class ClusterStatus:
    """One node's view: Raft state, members, and what gossip says of each."""

    node: str
    address: str
    role: str
    leader: str | None
    term: int
    commit_index: int
    applied_index: int
    voters: tuple[str, ...]
    # The replicated members table: name -> cluster address.
    members: dict[str, str]
    gossip: dict[str, MemberView]
    # This node applied its own removal (forget_cluster_node).
    removed: bool = False
    # The Raft group is idle and quiet: no heartbeats (RaftConfig.quiesce).
    quiet: bool = False

    @property
    def known_nodes(self) -> list[str]:
        """Every node of the cluster as this node knows it."""
        nodes = set(self.members) | set(self.voters)
        if not self.removed:
            nodes.add(self.node)
        return sorted(nodes)

    def is_running(self, name: str) -> bool:
        """Whether `name` is up as far as this node can tell."""
        if name == self.node:
            return True
        view = self.gossip.get(name)
        return view is not None and view.status is not MemberStatus.DEAD

    def reachable_voters(self) -> list[str]:
        """The voters this node hears from (itself included)."""
        return [
            voter
            for voter in self.voters
            if voter == self.node
            or (voter in self.gossip and self.gossip[voter].status is MemberStatus.ALIVE)
        ]

    def quorum_text(self) -> str:
        """Why a majority may be missing, for error messages."""
        voters = self.voters
        if not voters:
            return f"node {self.node} is not yet a member of a cluster"
        reachable = self.reachable_voters()
        needed = len(voters) // 2 + 1
        return (
            f"node {self.node} reaches {len(reachable)} of {len(voters)} members "
            f"({', '.join(reachable) or 'none'}); {needed} are needed for a majority"
        )


def cluster_status_report(status: ClusterStatus, cluster_name: str) -> dict[str, Any]:
    """RabbitMQ's `cluster_status --formatter json` keys, plus `raft` and `gossip`."""
    known = status.known_nodes
    running = [name for name in known if status.is_running(name)]
    alarms = [
        {"node": name, "resource": alarm, "type": "resource_alarm"}
        for name in known
        for alarm in _alarms_of(status, name)
    ]
    unreachable = [name for name in known if not status.is_running(name)]
    return {
        "cluster_name": cluster_name,
        "disk_nodes": known,
        "ram_nodes": [],
        "running_nodes": running,
        "partitions": {status.node: unreachable} if unreachable else {},
        "alarms": alarms,
        "feature_flags": [],
        "maintenance_status": {name: "not under maintenance" for name in running},
        "raft": {
            "leader": status.leader,
            "term": status.term,
            "commit_index": status.commit_index,
            "applied_index": status.applied_index,
            "role": status.role,
            "voters": list(status.voters),
            "quiet": status.quiet,
        },
        "gossip": {
            name: {"status": view.status.value, "incarnation": view.incarnation}
            for name, view in sorted(status.gossip.items())
        },
        "members": {name: status.members[name] for name in sorted(status.members)},
        "node": status.node,
        "removed": status.removed,
    }


def _alarms_of(status: ClusterStatus, name: str) -> tuple[str, ...]:
    view = status.gossip.get(name)
    if view is None or view.report is None or not status.is_running(name):
        return ()
    return view.report.alarms
