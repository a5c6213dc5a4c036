"""What a node tells the others about itself through gossip: health, alarms, queue counters."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class QueueCounters:
    """Soft state of one queue on its home node (for management and placement only)."""

    vhost: str
    name: str
    messages: int = 0
    messages_unacknowledged: int = 0
    consumers: int = 0


@dataclass(frozen=True, slots=True)
class NodeReport:
    """A node's own account of itself; `version` orders the reports of one incarnation."""

    version: int = 0
    alarms: tuple[str, ...] = ()
    memory_used: int = 0
    disk_free: int = 0
    queues: tuple[QueueCounters, ...] = ()
    run: str = ""  # which run of the node (a new one at each start)

    def same_content(self, other: NodeReport) -> bool:
        """Whether `other` says the same, whatever its version."""
        return (self.alarms, self.memory_used, self.disk_free, self.queues, self.run) == (
            other.alarms,
            other.memory_used,
            other.disk_free,
            other.queues,
            other.run,
        )
