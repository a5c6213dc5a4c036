"""This node's gossip report, read from the running broker: alarms, memory, disk, queues, links."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from cluster.gossip.report import ClientCount, LinkReport, NodeReport, QueueCounters
from leveret.names import RUN_ID
from leveret.server.memory_monitor import resident_bytes
from leveret.store.disk_monitor import free_bytes_of

from ..session import open_sessions

# Reports carry at most this many queues (the busiest), so a probe stays small.
MAX_QUEUES_REPORTED = 500
MAX_LINKS_REPORTED = 500
MAX_CLIENT_COUNTS_REPORTED = 2000
# Memory and disk figures are rounded so that noise does not make every report news.
_ROUNDING = 1 << 20


def broker_report(
    broker: Any, data_dir: Path, raft_role: str = "", raft_term: int = 0
) -> NodeReport:
    """The report of a node whose broker is `broker` (see leveret.broker.Broker), in Raft role
    `raft_role` at term `raft_term`."""
    queues = [
        QueueCounters(
            vhost=vhost.name,
            name=queue.name,
            messages=queue.message_count,
            messages_unacknowledged=queue.unacked,
            consumers=queue.consumer_count,
        )
        for vhost in list(broker.vhosts.values())
        for queue in list(vhost.queues.values())
    ]
    if len(queues) > MAX_QUEUES_REPORTED:
        queues.sort(key=lambda q: (-q.messages, q.vhost, q.name))
        queues = queues[:MAX_QUEUES_REPORTED]
    queues.sort(key=lambda q: (q.vhost, q.name))
    try:
        disk_free = free_bytes_of(str(data_dir)) // _ROUNDING * _ROUNDING
    except OSError:
        disk_free = 0
    return NodeReport(
        alarms=tuple(sorted(broker.alarms)),
        memory_used=resident_bytes() // _ROUNDING * _ROUNDING,
        disk_free=disk_free,
        queues=tuple(queues),
        run=RUN_ID,
        links=_links(broker),
        clients=_clients(broker),
        raft_role=raft_role,
        raft_term=raft_term,
    )


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
