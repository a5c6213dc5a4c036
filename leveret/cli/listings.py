"""The list_* commands of `leveret ctl`: where each listing comes from, its rabbitmqctl info
items, and its default columns."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote


def _vhost_path(vhost: str) -> str:
    return quote(vhost, safe="")


@dataclass(frozen=True)
class Listing:
    """A list_* command: where its items come from, its info items, and its default columns."""

    noun: str
    path: Callable[[str], str]
    info_items: dict[str, Callable[[dict[str, Any]], Any]]
    default_columns: tuple[str, ...]
    per_vhost: bool = True


def _field(name: str) -> Callable[[dict[str, Any]], Any]:
    return lambda item: item.get(name)


def _fields(*names: str) -> dict[str, Callable[[dict[str, Any]], Any]]:
    return {name: _field(name) for name in names}


QUEUE_INFO = _fields(
    "name",
    "durable",
    "auto_delete",
    "arguments",
    "policy",
    "exclusive",
    "exclusive_consumer_tag",
    "messages_ready",
    "messages_unacknowledged",
    "messages",
    "messages_ready_ram",
    "messages_unacknowledged_ram",
    "messages_ram",
    "messages_persistent",
    "message_bytes",
    "message_bytes_ready",
    "message_bytes_unacknowledged",
    "message_bytes_ram",
    "message_bytes_persistent",
    "head_message_timestamp",
    "consumers",
    "consumer_utilisation",
    "consumer_capacity",
    "memory",
    "state",
    "type",
    "operator_policy",
    "effective_policy_definition",
    "single_active_consumer_tag",
) | {
    "pid": _field("node"),
    "owner_pid": lambda q: None,
    "exclusive_consumer_pid": lambda q: None,
    "disk_reads": lambda q: 0,
    "disk_writes": lambda q: 0,
    "slave_pids": lambda q: [],
    "synchronised_slave_pids": lambda q: [],
    "leader": _field("node"),
    "members": lambda q: [q.get("node")],
    "online": lambda q: [q.get("node")],
}

LISTINGS: dict[str, Listing] = {
    "list_queues": Listing(
        "queues", lambda v: f"/api/queues/{_vhost_path(v)}", QUEUE_INFO, ("name", "messages")
    ),
    "list_exchanges": Listing(
        "exchanges",
        lambda v: f"/api/exchanges/{_vhost_path(v)}",
        _fields("name", "type", "durable", "auto_delete", "internal", "arguments", "policy"),
        ("name", "type"),
    ),
    "list_bindings": Listing(
        "bindings",
        lambda v: f"/api/bindings/{_vhost_path(v)}",
        {
            "source_name": _field("source"),
            "source_kind": lambda b: "exchange",
            "destination_name": _field("destination"),
            "destination_kind": _field("destination_type"),
            "routing_key": _field("routing_key"),
            "arguments": _field("arguments"),
            "vhost": _field("vhost"),
        },
        (
            "source_name",
            "source_kind",
            "destination_name",
            "destination_kind",
            "routing_key",
            "arguments",
        ),
    ),
    "list_connections": Listing(
        "connections",
        lambda v: "/api/connections",
        _fields(
            "name",
            "user",
            "vhost",
            "peer_host",
            "peer_port",
            "host",
            "port",
            "state",
            "channels",
            "protocol",
            "auth_mechanism",
            "ssl",
            "frame_max",
            "channel_max",
            "timeout",
            "client_properties",
            "connected_at",
            "recv_oct",
            "send_oct",
            "recv_cnt",
            "send_cnt",
            "send_pend",
            "type",
            "user_who_performed_action",
        )
        | {"pid": _field("name"), "node": _field("node")},
        ("user", "peer_host", "peer_port", "state"),
        per_vhost=False,
    ),
    "list_channels": Listing(
        "channels",
        lambda v: "/api/channels",
        _fields(
            "name",
            "number",
            "user",
            "vhost",
            "transactional",
            "confirm",
            "consumer_count",
            "messages_unacknowledged",
            "messages_unconfirmed",
            "messages_uncommitted",
            "acks_uncommitted",
            "prefetch_count",
            "global_prefetch_count",
            "state",
        )
        | {
            "pid": _field("name"),
            "connection": lambda c: (c.get("connection_details") or {}).get("name"),
        },
        ("pid", "user", "consumer_count", "messages_unacknowledged"),
        per_vhost=False,
    ),
    "list_consumers": Listing(
        "consumers",
        lambda v: f"/api/consumers/{_vhost_path(v)}",
        {
            "queue_name": lambda c: (c.get("queue") or {}).get("name"),
            "channel_pid": lambda c: (c.get("channel_details") or {}).get("name"),
            "consumer_tag": _field("consumer_tag"),
            "ack_required": _field("ack_required"),
            "prefetch_count": _field("prefetch_count"),
            "active": _field("active"),
            "activity_status": _field("activity_status"),
            "arguments": _field("arguments"),
            "exclusive": _field("exclusive"),
        },
        (
            "queue_name",
            "channel_pid",
            "consumer_tag",
            "ack_required",
            "prefetch_count",
            "active",
            "arguments",
        ),
    ),
    "list_vhosts": Listing(
        "vhosts",
        lambda v: "/api/vhosts",
        _fields("name", "description", "tags", "tracing", "default_queue_type", "cluster_state"),
        ("name",),
        per_vhost=False,
    ),
}
