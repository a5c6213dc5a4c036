"""Prometheus text exposition with rabbitmq_prometheus's metric names and labels.

`/metrics` aggregates object metrics over the node (no queue or channel labels), as RabbitMQ does
by default; `/metrics/per-object` labels them with vhost and queue, channel or connection. Totals
the core does not count per channel are derived from the queues' counters.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .. import __version__
from ..session import open_sessions
from .connection_view import channel_name, connection_name
from .figures import QueueFigures, total
from .node_view import COMPATIBLE_RABBITMQ_VERSION, runtime_version
from .system import system_figures

if TYPE_CHECKING:
    from ..broker import Broker
    from ..queues.classic import ClassicQueue
    from .state import ManagementState

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
Labels = tuple[tuple[str, str], ...]
_CLASSIC = (("queue_type", "rabbit_classic_queue"),)
_AMQP = (("protocol", "amqp091"),)


@dataclass(slots=True)
class Family:
    name: str
    kind: str  # gauge, counter, untyped
    help: str
    samples: list[tuple[Labels, float]] = field(default_factory=list)

    def add(self, value: float, labels: Labels = ()) -> Family:
        self.samples.append((labels, value))
        return self


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(value)


def render(families: Iterable[Family]) -> str:
    lines: list[str] = []
    for family in families:
        lines.append(f"# TYPE {family.name} {family.kind}")
        lines.append(f"# HELP {family.name} {family.help}")
        for labels, value in family.samples:
            if labels:
                shown = ",".join(f'{key}="{_escape(val)}"' for key, val in labels)
                lines.append(f"{family.name}{{{shown}}} {_number(value)}")
            else:
                lines.append(f"{family.name} {_number(value)}")
    return "\n".join(lines) + "\n"


# (metric name, help, how to read it from a queue's figures)
_QUEUE_GAUGES: tuple[tuple[str, str, str], ...] = (
    ("rabbitmq_queue_messages_ready", "Messages ready to be delivered to consumers", "ready"),
    (
        "rabbitmq_queue_messages_unacked",
        "Messages delivered to consumers and not yet acknowledged",
        "unacked",
    ),
    ("rabbitmq_queue_messages", "Ready and unacknowledged messages: the queue's depth", "messages"),
    ("rabbitmq_queue_messages_ready_bytes", "Bytes of ready messages", "ready_bytes"),
    ("rabbitmq_queue_messages_unacked_bytes", "Bytes of unacknowledged messages", "unacked_bytes"),
    (
        "rabbitmq_queue_messages_bytes",
        "Bytes of ready and unacknowledged messages",
        "message_bytes",
    ),
    ("rabbitmq_queue_messages_persistent", "Persistent messages", "persistent"),
    (
        "rabbitmq_queue_messages_persistent_bytes",
        "Bytes of persistent messages",
        "persistent_bytes",
    ),
    ("rabbitmq_queue_messages_ram", "Ready and unacknowledged messages held in memory", "ram"),
    ("rabbitmq_queue_messages_ready_ram", "Ready messages held in memory", "ready_in_memory"),
    ("rabbitmq_queue_messages_unacked_ram", "Unacknowledged messages held in memory", "unacked"),
    ("rabbitmq_queue_messages_paged_out", "Ready messages kept on disk only", "paged_out"),
)


def _queue_value(figure: QueueFigures, what: str) -> int:
    if what == "messages":
        return figure.messages
    if what == "message_bytes":
        return figure.message_bytes
    if what == "ram":
        return figure.ready_in_memory + figure.unacked
    if what == "paged_out":
        return max(figure.ready - figure.ready_in_memory, 0)
    return int(getattr(figure, what))


def _queue_families(figures: dict[ClassicQueue, QueueFigures], per_object: bool) -> list[Family]:
    families = []
    rows: list[tuple[Labels, QueueFigures, int]]
    if per_object:
        rows = [
            ((("vhost", q.vhost), ("queue", q.name)), f, q.consumer_count)
            for q, f in figures.items()
        ]
    else:
        rows = [((), total(figures.values()), sum(q.consumer_count for q in figures))]
    for name, text, what in _QUEUE_GAUGES:
        family = Family(name, "gauge", text)
        for labels, figure, _ in rows:
            family.add(_queue_value(figure, what), labels)
        families.append(family)
    consumers = Family("rabbitmq_queue_consumers", "gauge", "Consumers on a queue")
    for labels, _, count in rows:
        consumers.add(count, labels)
    families.append(consumers)
    if not per_object:
        # Per object, RabbitMQ breaks this down by channel and exchange, which are not counted.
        published = Family(
            "rabbitmq_queue_messages_published_total", "counter", "Messages published to queues"
        )
        families.append(published.add(rows[0][1].publish))
    return families


def _channel_families(
    broker: Broker, state: ManagementState, node_figure: QueueFigures, per_object: bool
) -> list[Family]:
    channels = [
        c for s in list(open_sessions(broker)) if s.vhost is not None for c in s.channels.values()
    ]
    gauges = (
        ("rabbitmq_channel_consumers", "Consumers on a channel", lambda c: len(c.consumers)),
        (
            "rabbitmq_channel_messages_unacked",
            "Delivered and not yet acknowledged messages",
            lambda c: len(c.unacked),
        ),
        (
            "rabbitmq_channel_messages_unconfirmed",
            "Published and not yet confirmed messages",
            lambda c: 0,
        ),
        (
            "rabbitmq_channel_messages_uncommitted",
            "Messages published in an open transaction",
            lambda c: 0,
        ),
        (
            "rabbitmq_channel_acks_uncommitted",
            "Acknowledgements in an open transaction",
            lambda c: 0,
        ),
        (
            "rabbitmq_consumer_prefetch",
            "Unacknowledged message limit of each new consumer",
            lambda c: c.consumer_prefetch,
        ),
        (
            "rabbitmq_channel_prefetch",
            "Unacknowledged message limit shared by a channel's consumers",
            lambda c: c.channel_prefetch,
        ),
    )
    families = []
    for name, text, read in gauges:
        family = Family(name, "gauge", text)
        if per_object:
            for channel in channels:
                family.add(read(channel), (("channel", channel_name(channel, state)),))
        else:
            family.add(sum(read(channel) for channel in channels))
        families.append(family)
    if per_object:
        return families
    # Channels do not count their traffic yet: the node's totals come from the queues.
    counters = (
        (
            "rabbitmq_channel_messages_published_total",
            "Messages published into an exchange",
            node_figure.publish,
        ),
        ("rabbitmq_channel_messages_confirmed_total", "Messages published and confirmed", 0),
        (
            "rabbitmq_channel_messages_unroutable_returned_total",
            "Mandatory messages returned as unroutable",
            0,
        ),
        ("rabbitmq_channel_messages_unroutable_dropped_total", "Messages dropped as unroutable", 0),
        (
            "rabbitmq_channel_get_ack_total",
            "Messages fetched with basic.get and manual acknowledgement",
            node_figure.get,
        ),
        (
            "rabbitmq_channel_get_total",
            "Messages fetched with basic.get and automatic acknowledgement",
            node_figure.get_no_ack,
        ),
        (
            "rabbitmq_channel_messages_delivered_ack_total",
            "Messages delivered to consumers with manual acknowledgement",
            node_figure.deliver,
        ),
        (
            "rabbitmq_channel_messages_delivered_total",
            "Messages delivered to consumers with automatic acknowledgement",
            node_figure.deliver_no_ack,
        ),
        (
            "rabbitmq_channel_messages_redelivered_total",
            "Messages redelivered to consumers",
            node_figure.redeliver,
        ),
        (
            "rabbitmq_channel_messages_acked_total",
            "Messages acknowledged by consumers",
            node_figure.ack,
        ),
        (
            "rabbitmq_channel_get_empty_total",
            "basic.get operations that found no message",
            node_figure.get_empty,
        ),
    )
    return families + [Family(name, "counter", text).add(value) for name, text, value in counters]


def _connection_families(broker: Broker, state: ManagementState, per_object: bool) -> list[Family]:
    sessions = [s for s in list(open_sessions(broker)) if s.vhost is not None and not s.closed]
    family = Family("rabbitmq_connection_channels", "gauge", "Channels on a connection")
    if per_object:
        for session in sessions:
            # RabbitMQ names this label "channel" although it identifies the connection.
            family.add(len(session.channels), (("channel", connection_name(session, state)),))
    else:
        family.add(sum(len(s.channels) for s in sessions))
    return [family]


def _global_families(broker: Broker, node_figure: QueueFigures, consumers: int) -> list[Family]:
    publishers = sum(
        1 for s in list(open_sessions(broker)) for c in s.channels.values() if not c.consumers
    )
    received = node_figure.publish
    counters = (
        ("received", "Messages received from publishers", received, _AMQP),
        ("received_confirm", "Messages received from publishers expecting confirms", 0, _AMQP),
        ("routed", "Messages routed to queues", received, _AMQP),
        ("unroutable_dropped", "Unroutable messages dropped", 0, _AMQP),
        ("unroutable_returned", "Unroutable messages returned to publishers", 0, _AMQP),
        ("confirmed", "Messages confirmed to publishers", 0, _AMQP),
        ("delivered", "Messages delivered to consumers", node_figure.deliver_get, _AMQP + _CLASSIC),
        (
            "delivered_consume_manual_ack",
            "Deliveries to consumers with manual acknowledgement",
            node_figure.deliver,
            _AMQP + _CLASSIC,
        ),
        (
            "delivered_consume_auto_ack",
            "Deliveries to consumers with automatic acknowledgement",
            node_figure.deliver_no_ack,
            _AMQP + _CLASSIC,
        ),
        (
            "delivered_get_manual_ack",
            "basic.get deliveries with manual acknowledgement",
            node_figure.get,
            _AMQP + _CLASSIC,
        ),
        (
            "delivered_get_auto_ack",
            "basic.get deliveries with automatic acknowledgement",
            node_figure.get_no_ack,
            _AMQP + _CLASSIC,
        ),
        (
            "get_empty",
            "basic.get operations that found no message",
            node_figure.get_empty,
            _AMQP + _CLASSIC,
        ),
        (
            "redelivered",
            "Messages redelivered to consumers",
            node_figure.redeliver,
            _AMQP + _CLASSIC,
        ),
        ("acknowledged", "Messages acknowledged by consumers", node_figure.ack, _AMQP + _CLASSIC),
    )
    families = [
        Family(f"rabbitmq_global_messages_{name}_total", "counter", text).add(value, labels)
        for name, text, value, labels in counters
    ]
    families.append(
        Family("rabbitmq_global_publishers", "gauge", "Channels that publish").add(
            publishers, _AMQP
        )
    )
    families.append(Family("rabbitmq_global_consumers", "gauge", "Consumers").add(consumers, _AMQP))
    return families


def metrics_text(broker: Broker, state: ManagementState, *, per_object: bool = False) -> str:
    config = broker.config
    figures = state.figures()
    node_figure = total(figures.values())
    system = system_figures(config)
    churn = state.churn
    sessions = [s for s in list(open_sessions(broker)) if s.vhost is not None and not s.closed]
    consumers = sum(q.consumer_count for q in figures)
    identity = (
        ("rabbitmq_node", config.node_name),
        ("rabbitmq_cluster", config.cluster_name),
        (
            "rabbitmq_cluster_permanent_id",
            str(state.registry.global_parameters.get("internal_cluster_id", "")),
        ),
    )
    build = (
        ("rabbitmq_version", COMPATIBLE_RABBITMQ_VERSION),
        ("prometheus_plugin_version", __version__),
        ("prometheus_client_version", __version__),
        ("erlang_version", runtime_version()),
    )
    node: list[Family] = [
        Family("rabbitmq_identity_info", "untyped", "Node and cluster identity").add(1, identity),
        Family("rabbitmq_build_info", "untyped", "Version information").add(1, build),
        Family("rabbitmq_connections_opened_total", "counter", "Connections opened").add(
            churn.connections_opened
        ),
        Family("rabbitmq_connections_closed_total", "counter", "Connections closed").add(
            churn.connections_closed
        ),
        Family("rabbitmq_channels_opened_total", "counter", "Channels opened").add(
            churn.channels_opened
        ),
        Family("rabbitmq_channels_closed_total", "counter", "Channels closed").add(
            churn.channels_closed
        ),
        Family("rabbitmq_queues_declared_total", "counter", "Queues declared").add(
            churn.queues_created
        ),
        Family("rabbitmq_queues_created_total", "counter", "Queues created").add(
            churn.queues_created
        ),
        Family("rabbitmq_queues_deleted_total", "counter", "Queues deleted").add(
            churn.queues_deleted
        ),
        Family("rabbitmq_process_open_fds", "gauge", "Open file descriptors").add(system.fd_used),
        Family("rabbitmq_process_open_tcp_sockets", "gauge", "Open client connections").add(
            len(sessions)
        ),
        Family("rabbitmq_process_resident_memory_bytes", "gauge", "Resident memory in bytes").add(
            system.mem_used
        ),
        Family(
            "rabbitmq_disk_space_available_bytes", "gauge", "Free disk space of the data directory"
        ).add(system.disk_free),
        Family("rabbitmq_process_max_fds", "gauge", "File descriptor limit").add(system.fd_total),
        Family("rabbitmq_process_max_tcp_sockets", "gauge", "Client connection limit").add(
            system.fd_total
        ),
        Family(
            "rabbitmq_resident_memory_limit_bytes", "gauge", "Memory high watermark in bytes"
        ).add(system.mem_limit),
        Family(
            "rabbitmq_disk_space_available_limit_bytes",
            "gauge",
            "Free disk space low watermark in bytes",
        ).add(system.disk_free_limit),
        Family("rabbitmq_erlang_uptime_seconds", "gauge", "Node uptime in seconds").add(
            round(time.monotonic() - state.started_monotonic, 3)
        ),
        Family("rabbitmq_auth_attempts_total", "counter", "Authentication attempts").add(
            state.http_auth.attempts, (("protocol", "http"),)
        ),
        Family(
            "rabbitmq_auth_attempts_succeeded_total",
            "counter",
            "Successful authentication attempts",
        ).add(state.http_auth.succeeded, (("protocol", "http"),)),
        Family(
            "rabbitmq_auth_attempts_failed_total", "counter", "Failed authentication attempts"
        ).add(state.http_auth.failed, (("protocol", "http"),)),
        Family("rabbitmq_connections", "gauge", "Connections open").add(len(sessions)),
        Family("rabbitmq_channels", "gauge", "Channels open").add(
            sum(len(s.channels) for s in sessions)
        ),
        Family("rabbitmq_consumers", "gauge", "Consumers").add(consumers),
        Family("rabbitmq_queues", "gauge", "Queues").add(len(figures)),
    ]
    if not per_object:
        # RabbitMQ shows alarms in the aggregated output only.
        node[2:2] = [
            Family(
                "rabbitmq_alarms_file_descriptor_limit",
                "untyped",
                "1 while the file descriptor alarm is in effect",
            ).add(0),
            Family(
                "rabbitmq_alarms_free_disk_space_watermark",
                "untyped",
                "1 while the disk alarm is in effect",
            ).add(int("disk" in broker.alarms)),
            Family(
                "rabbitmq_alarms_memory_used_watermark",
                "untyped",
                "1 while the memory alarm is in effect",
            ).add(int("memory" in broker.alarms)),
        ]
    families = (
        node
        + _queue_families(figures, per_object)
        + _channel_families(broker, state, node_figure, per_object)
        + _connection_families(broker, state, per_object)
        + _global_families(broker, node_figure, consumers)
        + _federation_families(broker)
    )
    return render(families)


def _federation_families(broker: Broker) -> list[Family]:
    """rabbitmq_federation_links by status, for the links this node runs (as the federation
    plugin's collector: only with federation, one sample per status in use)."""
    if broker.federation is None:
        return []
    by_status = Counter(link["status"] for link in broker.federation.describe())
    family = Family("rabbitmq_federation_links", "gauge", "Current number of federation links.")
    for status, count in sorted(by_status.items()):
        family.add(count, (("status", status),))
    return [family]
