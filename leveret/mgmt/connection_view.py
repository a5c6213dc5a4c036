"""Connections, channels and consumers as RabbitMQ's management API shows them."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, cast

from ..queues.remote_consumer import RemoteQueueHandle
from .json_values import jsonable, rfc3339_millis

if TYPE_CHECKING:
    from ..channel import Channel
    from ..queues.classic import Consumer
    from ..session import Session
    from .state import ManagementState


def local_address(session: Session, state: ManagementState) -> tuple[str, int]:
    """The node's end of the connection (from the socket, else the AMQP listener's port)."""
    transport = getattr(session.transport, "transport", None)
    if transport is not None:
        sockname = transport.get_extra_info("sockname")
        if sockname:
            return str(sockname[0]), int(sockname[1])
    return state.listen_host, int(state.listeners.get("amqp", 0))


def connection_name(session: Session, state: ManagementState) -> str:
    host, port = local_address(session, state)
    return f"{session.peer[0]}:{session.peer[1]} -> {host}:{port}"


def session_of(channel: Channel) -> Session:
    """The AMQP connection of a channel (a channel itself types it by the little it uses)."""
    return cast("Session", channel.session)


def channel_name(channel: Channel, state: ManagementState) -> str:
    return f"{connection_name(session_of(channel), state)} ({channel.number})"


def connection_json(session: Session, state: ManagementState, node: str) -> dict[str, Any]:
    host, port = local_address(session, state)
    conn = session.conn
    connected_at = state.churn.first_seen.get(id(session), time.time())
    figure: dict[str, Any] = {
        "auth_mechanism": session.auth_mechanism,
        "channel_max": conn.channel_max,
        "channels": len(session.channels),
        "client_properties": jsonable(session.client_properties),
        "connected_at": int(connected_at * 1000),
        "frame_max": conn.frame_max,
        "host": host,
        "name": connection_name(session, state),
        "node": node,
        "peer_host": session.peer[0],
        "peer_port": session.peer[1],
        "port": port,
        "protocol": "AMQP 0-9-1",
        "recv_cnt": 0,
        "recv_oct": 0,
        "recv_oct_details": {"rate": 0.0},
        "send_cnt": 0,
        "send_oct": 0,
        "send_oct_details": {"rate": 0.0},
        "send_pend": 0,
        "state": "blocked" if session.blocked else "running",
        "timeout": conn.heartbeat,
        "type": "network",
        "user": session.username,
        "user_who_performed_action": session.username,
        "vhost": session.vhost.name if session.vhost is not None else None,
    }
    figure.update(_tls_figures(session))
    provided = session.client_properties.get("connection_name")
    if provided is not None:
        figure["user_provided_name"] = jsonable(provided)
    return figure


def _tls_figures(session: Session) -> dict[str, Any]:
    """RabbitMQ's ssl fields: all null on a plain connection."""
    tls = session.tls
    if tls is None:
        return {
            "peer_cert_issuer": None,
            "peer_cert_subject": None,
            "peer_cert_validity": None,
            "ssl": False,
            "ssl_cipher": None,
            "ssl_hash": None,
            "ssl_key_exchange": None,
            "ssl_protocol": None,
        }
    return {
        "peer_cert_issuer": tls.issuer,
        "peer_cert_subject": tls.subject,
        "peer_cert_validity": tls.validity,
        "ssl": True,
        "ssl_cipher": tls.cipher,
        "ssl_hash": tls.hash,
        "ssl_key_exchange": tls.key_exchange,
        "ssl_protocol": tls.protocol,
    }


def connection_details(session: Session, state: ManagementState) -> dict[str, Any]:
    return {
        "name": connection_name(session, state),
        "peer_host": session.peer[0],
        "peer_port": session.peer[1],
    }


def channel_json(channel: Channel, state: ManagementState, node: str) -> dict[str, Any]:
    session = session_of(channel)
    return {
        "acks_uncommitted": 0,
        "confirm": channel.publisher.confirming,
        "connection_details": connection_details(session, state),
        "consumer_count": len(channel.consumers),
        "global_prefetch_count": channel.channel_prefetch,
        "idle_since": rfc3339_millis(state.churn.first_seen.get(id(channel), time.time())),
        "messages_unacknowledged": len(channel.unacked),
        "messages_uncommitted": 0,
        "messages_unconfirmed": 0,
        "name": channel_name(channel, state),
        "node": node,
        "number": channel.number,
        "pending_raft_commands": 0,
        "prefetch_count": channel.consumer_prefetch,
        "state": "running",
        "transactional": channel.transactional,
        "user": session.username,
        "user_who_performed_action": session.username,
        "vhost": session.vhost.name if session.vhost is not None else None,
    }


def consumer_json(consumer: Consumer, state: ManagementState, node: str) -> dict[str, Any]:
    queue = consumer.queue
    client_node = getattr(consumer.sink, "client_node", None)
    if client_node is not None:
        # A consumer whose client is on another node: that node knows its channel.
        details = {"node": client_node}
    else:
        details = _channel_details(consumer.sink, state, node)  # type: ignore[arg-type]
    active = not queue.single_active_consumer or queue.active_consumer() is consumer
    if not queue.single_active_consumer:
        status = "up"
    elif active:
        status = "single_active"
    else:
        status = "waiting"
    return {
        "arguments": jsonable(consumer.arguments),
        "ack_required": not consumer.no_ack,
        "active": active,
        "activity_status": status,
        "channel_details": details,
        "consumer_tag": consumer.tag,
        "exclusive": consumer.exclusive,
        "prefetch_count": consumer.prefetch,
        "queue": {"name": queue.name, "vhost": queue.vhost},
    }


def consumer_channels(
    channels: list[Channel], state: ManagementState, node: str
) -> list[dict[str, Any]]:
    """The channel details of these channels' consumers of queues homed on other nodes: their
    home nodes list those consumers knowing only this node (see with_channel_details)."""
    return [
        {
            "queue": {"name": consumer.queue.name, "vhost": consumer.queue.vhost},
            "consumer_tag": consumer.tag,
            "channel_details": _channel_details(channel, state, node),
        }
        for channel in channels
        for consumer in list(channel.consumers.values())
        if isinstance(consumer.queue, RemoteQueueHandle)
    ]


def with_channel_details(
    consumers: list[dict[str, Any]], channels: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """`consumers`, those whose client is on another node given the details of their channel
    there, from `channels` (consumer_channels of the nodes the clients are on)."""
    known = {_consumer_key(item): item["channel_details"] for item in channels}
    filled = []
    for consumer in consumers:
        if "name" not in consumer["channel_details"]:
            details = known.get(_consumer_key(consumer))
            if details is not None:
                consumer = {**consumer, "channel_details": details}
        filled.append(consumer)
    return filled


def _consumer_key(consumer: dict[str, Any]) -> tuple[str, str, str, str]:
    """A consumer as the cluster names it: its client's node, its queue and its tag."""
    queue = consumer["queue"]
    return (
        consumer["channel_details"]["node"],
        queue["vhost"],
        queue["name"],
        consumer["consumer_tag"],
    )


def _channel_details(channel: Channel, state: ManagementState, node: str) -> dict[str, Any]:
    session = session_of(channel)
    return {
        "connection_name": connection_name(session, state),
        "name": channel_name(channel, state),
        "node": node,
        "number": channel.number,
        "peer_host": session.peer[0],
        "peer_port": session.peer[1],
        "user": session.username,
    }
