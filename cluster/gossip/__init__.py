"""SWIM-style failure detection and dissemination of node state, as a pure core and a driver."""

from cluster.gossip.report import LinkReport, NodeReport, QueueCounters
from cluster.gossip.swim import MemberState, MemberStatus, MemberView, Swim, SwimConfig

__all__ = [
    "LinkReport",
    "MemberState",
    "MemberStatus",
    "MemberView",
    "NodeReport",
    "QueueCounters",
    "Swim",
    "SwimConfig",
]
