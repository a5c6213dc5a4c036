"""The node and cluster overview as RabbitMQ's management API shows them."""

from __future__ import annotations

import platform
import time
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..session import open_sessions
from .cluster_totals import elsewhere_totals
from .figures import QueueFigures
from .queue_view import message_stats
from .rates import with_details
from .state import CHURN_KEY, NODE_KEY, SYSTEM_KEY
from .system import SystemFigures, system_figures

if TYPE_CHECKING:
    from ..broker import Broker
    from .access import Caller
    from .state import ManagementState

# The RabbitMQ release whose management API this one mirrors: tools gate features on it.
COMPATIBLE_RABBITMQ_VERSION = "3.10.8"
PRODUCT_NAME = "Leveret"

_EXCHANGE_DESCRIPTIONS = {
    "direct": "AMQP direct exchange, as per the AMQP specification",
    "fanout": "AMQP fanout exchange, as per the AMQP specification",
    "headers": "AMQP headers exchange, as per the AMQP specification",
    "topic": "AMQP topic exchange, as per the AMQP specification",
}
_AUTH_MECHANISMS = (
    ("AMQPLAIN", "QPid AMQPLAIN mechanism"),
    ("PLAIN", "SASL PLAIN authentication mechanism"),
)
LISTENER_PROTOCOLS = {
    "amqp": "amqp",
    "amqps": "amqp/ssl",
    "mgmt": "http",
    "mgmt_https": "https",
    "prometheus": "http/prometheus",
    "prometheus_https": "https/prometheus",
    "cluster": "clustering",
}


def runtime_version() -> str:
    return f"Python {platform.python_version()}"


def exchange_types() -> list[dict[str, Any]]:
    return [
        {"name": name, "description": description, "enabled": True}
        for name, description in sorted(_EXCHANGE_DESCRIPTIONS.items())
    ]


def listeners(state: ManagementState, node: str) -> list[dict[str, Any]]:
    found = []
    for name, port in sorted(state.listeners.items()):
        protocol = LISTENER_PROTOCOLS.get(name, name)
        found.append(
            {
                "node": node,
                "protocol": protocol,
                "ip_address": state.listen_host,
                "port": port,
                "socket_opts": {},
            }
        )
    return found


def contexts(state: ManagementState, node: str) -> list[dict[str, Any]]:
    port = state.listeners.get("mgmt")
    if port is None:
        return []
    return [
        {
            "ssl_opts": [],
            "node": node,
            "description": "RabbitMQ Management",
            "path": "/",
            "ip": state.listen_host,
            "port": str(port),
        }
    ]


def churn_rates(state: ManagementState) -> dict[str, Any]:
    churn = state.churn
    figures = {
        "channel_closed": churn.channels_closed,
        "channel_created": churn.channels_opened,
        "connection_closed": churn.connections_closed,
        "connection_created": churn.connections_opened,
        "queue_created": churn.queues_created,
        "queue_declared": churn.queues_created,
        "queue_deleted": churn.queues_deleted,
    }
    return with_details(figures, state.rates, CHURN_KEY)


def queue_totals(figure: QueueFigures, state: ManagementState, key: object) -> dict[str, Any]:
    return with_details(
        {
            "messages": figure.messages,
            "messages_ready": figure.ready,
            "messages_unacknowledged": figure.unacked,
        },
        state.rates,
        key,  # type: ignore[arg-type]
    )


def overview_json(
    broker: Broker, state: ManagementState, caller: Caller, vhosts: list[str]
) -> dict[str, Any]:
    node = broker.config.node_name
    queues = [
        queue
        for name in vhosts
        if (vhost := broker.vhosts.get(name)) is not None
        for queue in vhost.queues.values()
    ]
    # Queues homed on other nodes, and their clients, count too (as in RabbitMQ's overview).
    remote = [
        queue
        for name in vhosts
        if (vhost := broker.vhosts.get(name)) is not None
        for queue in vhost.remote_queues.values()
    ]
    elsewhere = elsewhere_totals(broker, caller, vhosts, remote)
    state.observe()
    node_figure = state.reader.counts(queues)
    sessions = [s for s in open_sessions(broker) if caller.is_monitor or s.username == caller.name]
    channels = [c for s in sessions for c in s.channels.values()]
    object_totals: dict[str, int] = {
        "channels": len(channels) + elsewhere.channels,
        "connections": len(sessions) + elsewhere.connections,
        "exchanges": sum(len(broker.vhosts[v].exchanges) for v in vhosts if v in broker.vhosts),
        "queues": len(queues) + len(remote),
    }
    if caller.is_monitor:
        object_totals["consumers"] = sum(q.consumer_count for q in queues) + elsewhere.consumers
        object_totals = dict(sorted(object_totals.items()))
    totals = queue_totals(node_figure, state, NODE_KEY) if queues or remote else {}
    if remote:
        totals["messages"] += elsewhere.messages
        totals["messages_ready"] += elsewhere.messages - elsewhere.unacknowledged
        totals["messages_unacknowledged"] += elsewhere.unacknowledged
    had_consumers = any(q.had_consumers for q in queues)
    overview: dict[str, Any] = {
        "management_version": COMPATIBLE_RABBITMQ_VERSION,
        "rates_mode": "basic",
        "sample_retention_policies": {
            "global": [600, 3600, 28800, 86400],
            "basic": [600, 3600],
            "detailed": [600],
        },
        "exchange_types": exchange_types(),
        "product_version": __version__,
        "product_name": PRODUCT_NAME,
        "rabbitmq_version": COMPATIBLE_RABBITMQ_VERSION,
        "cluster_name": broker.config.cluster_name,
        "erlang_version": runtime_version(),
        "erlang_full_version": f"{runtime_version()} ({platform.python_implementation()})",
        "release_series_support_status": "supported",
        "disable_stats": False,
        "enable_queue_totals": False,
        "message_stats": message_stats(node_figure, state, NODE_KEY, had_consumers),
        "churn_rates": churn_rates(state),
        "queue_totals": totals,
        "object_totals": object_totals,
        "statistics_db_event_queue": 0,
    }
    if caller.is_monitor:
        overview["node"] = node
        overview["listeners"] = listeners(state, node)
        overview["contexts"] = contexts(state, node)
    return overview


def node_json(broker: Broker, state: ManagementState, *, memory: bool = False) -> dict[str, Any]:
    config = broker.config
    node = config.node_name
    system: SystemFigures = system_figures(config)
    churn = state.churn
    shown: dict[str, Any] = {
        "partitions": [],
        "os_pid": str(system.os_pid),
        "fd_total": system.fd_total,
        "sockets_total": system.fd_total,
        "mem_limit": system.mem_limit,
        "mem_alarm": "memory" in broker.alarms,
        "disk_free_limit": system.disk_free_limit,
        "disk_free_alarm": "disk" in broker.alarms,
        "rates_mode": "basic",
        "uptime": int((time.monotonic() - state.started_monotonic) * 1000),
        "processors": system.processors,
        "exchange_types": exchange_types(),
        "auth_mechanisms": [
            {"name": name, "description": description, "enabled": True}
            for name, description in _AUTH_MECHANISMS
        ],
        "applications": [
            {"name": "leveret", "description": "Leveret message broker", "version": __version__},
        ],
        "contexts": contexts(state, node),
        "log_files": ["<stdout>"],
        "db_dir": str(config.data_path.resolve()),
        "config_files": [],
        "enabled_plugins": ["rabbitmq_management", "rabbitmq_prometheus"],
        "mem_calculation_strategy": "rss",
        "name": node,
        "type": "disc",
        "running": True,
        "being_drained": False,
    }
    shown.update(
        with_details(
            {
                "mem_used": system.mem_used,
                "fd_used": system.fd_used,
                "sockets_used": len(open_sessions(broker)),
                "disk_free": system.disk_free,
            },
            state.rates,
            SYSTEM_KEY,
        )
    )
    shown.update(
        with_details(
            {
                "connection_created": churn.connections_opened,
                "connection_closed": churn.connections_closed,
                "channel_created": churn.channels_opened,
                "channel_closed": churn.channels_closed,
                "queue_declared": churn.queues_created,
                "queue_created": churn.queues_created,
                "queue_deleted": churn.queues_deleted,
            },
            state.rates,
            CHURN_KEY,
        )
    )
    shown["cluster_links"] = []
    if memory:
        shown["memory"] = {"total": {"rss": system.mem_used}, "strategy": "rss"}
    return shown
