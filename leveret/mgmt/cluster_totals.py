"""What the other nodes of the cluster hold, for the totals of /api/overview and /api/vhosts,
from their gossip reports (seconds old at most, as RabbitMQ's totals come from its stats
collection)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .cluster_link import cluster_control

if TYPE_CHECKING:
    from ..broker import Broker
    from ..queues.remote import RemoteQueue
    from .access import Caller


@dataclass
class ElsewhereTotals:
    """What the other nodes hold of what the overview counts."""

    connections: int = 0
    channels: int = 0
    consumers: int = 0
    messages: int = 0
    unacknowledged: int = 0


def elsewhere_totals(
    broker: Broker, caller: Caller, vhosts: list[str], remote: list[RemoteQueue]
) -> ElsewhereTotals:
    """The other nodes' connections and channels that `caller` sees (in `vhosts`, for a
    monitor; their own, for anyone else), and the counts of the `remote` queues."""
    totals = ElsewhereTotals()
    peers = broker.peer_clients
    if caller.is_monitor:
        totals.connections = sum(peers("vhost", vhost) for vhost in vhosts)
        totals.channels = sum(peers("user_channels", user) for user in list(broker.users))
    else:
        totals.connections = peers("user", caller.name)
        totals.channels = peers("user_channels", caller.name)
    totals.messages, totals.unacknowledged, totals.consumers = remote_counts(broker, remote)
    return totals


def remote_counts(broker: Broker, remote: list[RemoteQueue]) -> tuple[int, int, int]:
    """Messages, unacknowledged and consumers of the `remote` queues, as their home nodes
    last reported them."""
    reports = cluster_control(broker)
    messages = unacknowledged = consumers = 0
    if reports is not None:
        for queue in remote:
            _, counters = reports.queue_report(queue.home_node, queue.vhost, queue.name)
            messages += counters.get("messages", 0)
            unacknowledged += counters.get("messages_unacknowledged", 0)
            consumers += counters.get("consumers", 0)
    return messages, unacknowledged, consumers
