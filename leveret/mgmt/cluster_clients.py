"""The client connections, channels and consumers of the other nodes, asked of them, so that a
listing made on any node covers the whole cluster, as RabbitMQ's management API's does; and
closing a connection that another node holds."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..queues.remote import LinkDown, RequestKind
from .remote_queue_ops import answered_in_time

if TYPE_CHECKING:
    from ..broker import Broker

KINDS = ("connections", "channels", "consumers", "consumer_channels")


def other_nodes(broker: Broker) -> list[str]:
    """The other running nodes of the cluster ([] for a node alone)."""
    if broker.links is None:
        return []
    me = broker.config.node_name
    return sorted(node for node in broker.metadata.running_nodes() if node != me)


async def clients_elsewhere(broker: Broker) -> dict[str, list[dict[str, Any]]]:
    """What the other nodes list (see node_clients), merged by kind; a node that does not
    answer in time (see answered_in_time) is left out, as RabbitMQ leaves out a node it cannot
    reach."""
    merged: dict[str, list[dict[str, Any]]] = {kind: [] for kind in KINDS}
    links = broker.links
    nodes = other_nodes(broker)
    if links is None or not nodes:
        return merged

    async def ask(node: str) -> dict[str, Any] | None:
        try:
            answer = await links.link(node).request(RequestKind.CLIENTS, "", "")
        except LinkDown:
            return None
        return json.loads(answer.view) if not answer.code else None

    for listed in await answered_in_time([ask(node) for node in nodes]):
        if listed is not None:
            for kind in KINDS:
                merged[kind].extend(listed.get(kind, []))
    return merged


async def close_elsewhere(broker: Broker, node: str, name: str, reason: str) -> bool:
    """Have `node` close its client connection `name`; whether it had one."""
    if broker.links is None:
        return False
    try:
        answer = await broker.links.link(node).request(
            RequestKind.CLOSE_CONNECTION, "", "", name=name, reason=reason
        )
    except LinkDown:
        return False
    return not answer.code
