"""What a node tells the others about itself through gossip: health, alarms, queues, links."""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True, slots=True)
class QueueCounters:
    """Soft state of one queue on its home node (for management and placement only)."""

    vhost: str
    name: str
    messages: int = 0
    messages_unacknowledged: int = 0
    consumers: int = 0


@dataclass(frozen=True, slots=True)
class LinkReport:
    """Soft state of one federation link on the node that runs it, in RabbitMQ's field names
    (error, local_connection and demand are empty when they do not apply)."""

    vhost: str
    queue: str
    upstream: str
    upstream_queue: str
    id: str
    status: str
    uri: str
    consumer_tag: str
    timestamp: str
    error: str = ""
    local_connection: str = ""
    demand: str = ""


@dataclass(frozen=True, slots=True)
class ClientCount:
    """How many connections (`kind` "vhost" or "user") or channels ("user_channels") a node
    has for one vhost or user."""

    kind: str
    name: str
    count: int


@dataclass(frozen=True, slots=True)
class ConsumerFlow:
    """How many consumers connected to `node` consume from queues homed on the reporting node."""

    node: str
    consumers: int


@dataclass(frozen=True, slots=True)
class NodeReport:
    """A node's own account of itself; `version` orders the reports of one incarnation."""

    version: int = 0
    alarms: tuple[str, ...] = ()
    memory_used: int = 0
    disk_free: int = 0
    queues: tuple[QueueCounters, ...] = ()
    run: str = ""  # which run of the node (a new one at each start)
    links: tuple[LinkReport, ...] = ()  # the federation links the node runs
    clients: tuple[ClientCount, ...] = ()  # for the cluster-wide connection and channel limits
    raft_role: str = ""  # the node's Raft role and term, as it last reported them
    raft_term: int = 0
    # Consumers of the node's queues by their client's node, for the cluster map.
    consumer_flows: tuple[ConsumerFlow, ...] = ()

    def with_version(self, version: int) -> NodeReport:
        return replace(self, version=version)

    def same_content(self, other: NodeReport) -> bool:
        """Whether `other` says the same, whatever its version."""
        return replace(self, version=0) == replace(other, version=0)
