"""This node's gossip report, read from the running broker: alarms, memory, disk, queues, links."""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cluster.gossip.report import (
    ClientCount,
    ConsumerFlow,
    LinkReport,
    NodeReport,
    QueueCounters,
)
from leveret.memory import resident_bytes
from leveret.names import RUN_ID
from leveret.store.disk_monitor import free_bytes_of

from ..session import open_sessions

# Reports carry at most this many queues (the busiest), so a probe stays small.
MAX_QUEUES_REPORTED = 500
MAX_LINKS_REPORTED = 500
MAX_CLIENT_COUNTS_REPORTED = 2000
# Memory and disk figures are rounded so that noise does not make every report news.
_ROUNDING = 1 << 20


def broker_report(
    broker: Any,
    data_dir: Path,
    raft_role: str = "",
    raft_term: int = 0,
    remote_consumers: Mapping[str, int] | None = None,
) -> NodeReport:
    """The report of a node whose broker is `broker` (see leveret.broker.Broker), in Raft role
    `raft_role` at term `raft_term`; `remote_consumers` counts the consumers of its queues that
    other nodes' clients hold, by node."""
    # Plain tuples first, and counters made for the reported ones only: a node may have 10,000
    # queues, and the report is made again at every gossip round.
    rows: list[tuple[int, str, str, int, int]] = []
    consumers = 0
    for vhost in list(broker.vhosts.values()):
        for queue in list(vhost.queues.values()):
            count = queue.consumer_count
            consumers += count
            rows.append((queue.message_count, vhost.name, queue.name, queue.unacked, count))
    if len(rows) > MAX_QUEUES_REPORTED:
        rows = heapq.nsmallest(MAX_QUEUES_REPORTED, rows, key=lambda r: (-r[0], r[1], r[2]))
    rows.sort(key=lambda r: (r[1], r[2]))
    queues = tuple(
        QueueCounters(
            vhost=vhost,
            name=name,
            messages=messages,
            messages_unacknowledged=unacked,
            consumers=count,
        )
        for messages, vhost, name, unacked, count in rows
    )
    try:
        disk_free = free_bytes_of(str(data_dir)) // _ROUNDING * _ROUNDING
    except OSError:
        disk_free = 0
    return NodeReport(
        alarms=tuple(sorted(broker.alarms)),
        memory_used=resident_bytes() // _ROUNDING * _ROUNDING,
        disk_free=disk_free,
        queues=queues,
        run=RUN_ID,
        links=_links(broker),
        clients=_clients(broker),
        raft_role=raft_role,
        raft_term=raft_term,
        consumer_flows=_consumer_flows(broker, consumers, remote_consumers or {}),
    )


def _consumer_flows(
    broker: Any, everyone: int, remote: Mapping[str, int]
) -> tuple[ConsumerFlow, ...]:
    """Consumers of this node's queues (`everyone` of them) by the node of their clients (this
    node's own are those that no other node holds)."""
    flows = {node: count for node, count in remote.items() if count}
    local = everyone - sum(flows.values())
    if local > 0:
        flows[broker.config.node_name] = local
    return tuple(ConsumerFlow(node, count) for node, count in sorted(flows.items()))


def _clients(broker: Any) -> tuple[ClientCount, ...]:
    """Connections by vhost and by user, channels by user (of connections past their open)."""
    counts: Counter[tuple[str, str]] = Counter()
    for session in list(open_sessions(broker)):
        if session.vhost is None:
            continue
        counts["vhost", session.vhost.name] += 1
        counts["user", session.username] += 1
        counts["user_channels", session.username] += len(session.channels)
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return tuple(
        ClientCount(kind, name, count)
        for (kind, name), count in sorted(ordered[:MAX_CLIENT_COUNTS_REPORTED])
    )


def _links(broker: Any) -> tuple[LinkReport, ...]:
    federation = broker.federation
    if federation is None:
        return ()
    links = [
        LinkReport(**{field: str(link.get(field, "")) for field in LinkReport.__slots__})
        for link in federation.describe()
    ]
    links.sort(key=lambda link: (link.vhost, link.queue, link.upstream))
    return tuple(links[:MAX_LINKS_REPORTED])
