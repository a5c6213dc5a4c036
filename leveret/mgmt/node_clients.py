"""This node's client connections, channels and consumers for another node's management API
(the answer to the data plane's CLIENTS request), and closing one of them by name from there.

Each node lists what it holds: its own clients' connections and channels, and the consumers of
its own queues (a consumer through another node is listed by the queue's home, once). The asking
node merges the answers and checks who may see what, as RabbitMQ's management API lists the
whole cluster's clients from any node."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..session import open_sessions
from .connection_view import (
    channel_json,
    connection_json,
    connection_name,
    consumer_channels,
    consumer_json,
)
from .state import management_state

if TYPE_CHECKING:
    from ..broker import Broker
    from ..session import Session
    from .state import ManagementState


def clients_view(broker: Broker) -> bytes:
    """{"connections": [...], "channels": [...], "consumers": [...]} as this node lists them,
    and "consumer_channels": its channels' consumers of queues homed elsewhere, whose home
    nodes list them without their channel (connection_view.with_channel_details)."""
    state = management_state(broker)
    state.observe()
    node = broker.config.node_name
    sessions = node_sessions(broker)
    channels = [channel for s in sessions for channel in list(s.channels.values())]
    shown = {
        "connections": [connection_json(s, state, node) for s in sessions],
        "channels": [channel_json(c, state, node) for c in channels],
        "consumers": queue_consumers(broker, state),
        "consumer_channels": consumer_channels(channels, state, node),
    }
    return json.dumps(shown, separators=(",", ":"), default=str).encode()


def node_sessions(broker: Broker) -> list[Session]:
    """This node's open client connections."""
    return [s for s in list(open_sessions(broker)) if not s.closed and s.vhost is not None]


def queue_consumers(broker: Broker, state: ManagementState) -> list[dict[str, Any]]:
    """The consumers of this node's queues, whichever node their clients use."""
    node = broker.config.node_name
    return [
        consumer_json(consumer, state, node)
        for vhost in list(broker.vhosts.values())
        for queue in list(vhost.queues.values())
        for consumer in queue.consumers
    ]


def close_connection(broker: Broker, name: str, reason: str) -> bool:
    """Close this node's client connection called `name`; whether there was one."""
    state = management_state(broker)
    for session in list(open_sessions(broker)):
        if not session.closed and connection_name(session, state) == name:
            session.close_forced(reason)
            return True
    return False
