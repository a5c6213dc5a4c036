"""A queue homed on another node of the cluster, as the management API shows it.

Its definition comes from the replicated metadata; its counts come from its home node, asked
at the time, or else the soft state that node last gossiped. A home node asked for its view
answers with the queue's JSON there (message_stats, rates, sample history, consumers), which is
shown as it came. RabbitMQ shows the queue of a node that is down as "down".
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Protocol

from ..declare_rules import is_stream
from .home_queue_view import DETAIL_FIELDS
from .json_values import jsonable
from .queue_view import effective_definition, policies_of

if TYPE_CHECKING:
    from ..queues.remote import QueueStatus, RemoteQueue
    from .state import ManagementState


class QueueReports(Protocol):
    """What a cluster tells of queues on other nodes (leveret.mgmt.api_cluster.ClusterControl)."""

    def queue_report(self, node: str, vhost: str, name: str) -> tuple[bool, dict[str, int]]: ...


def remote_queue_json(
    queue: RemoteQueue,
    reports: QueueReports | None,
    state: ManagementState,
    *,
    totals: bool = True,
    live: QueueStatus | None = None,
    detailed: bool = False,
) -> dict[str, Any]:
    if live is not None and live.view and totals:
        return _home_view(live.view, detailed)
    running, counters = (
        reports.queue_report(queue.home_node, queue.vhost, queue.name) if reports else (False, {})
    )
    if live is not None:
        running = True
        counters = {
            "messages": live.message_count + live.unacked_count,
            "messages_unacknowledged": live.unacked_count,
            "consumers": live.consumer_count,
        }
    policy, operator_policy = policies_of(state.registry, queue.vhost, "queue", queue.name)
    messages = counters.get("messages", 0)
    unacked = counters.get("messages_unacknowledged", 0)
    shown: dict[str, Any] = {
        "arguments": jsonable(dict(queue.decl.arguments)),
        "auto_delete": queue.decl.auto_delete,
        "durable": queue.decl.durable,
        "effective_policy_definition": effective_definition(policy, operator_policy),
        "exclusive": queue.exclusive_owner is not None,
        "name": queue.name,
        "node": queue.home_node,
        "operator_policy": operator_policy.name if operator_policy is not None else None,
        "policy": policy.name if policy is not None else None,
        "state": "running" if running else "down",
        "type": "stream" if is_stream(queue.decl.arguments) else "classic",
        "vhost": queue.vhost,
    }
    if totals:
        shown["consumers"] = counters.get("consumers", 0)
        shown["messages"] = messages
        shown["messages_ready"] = max(messages - unacked, 0)
        shown["messages_unacknowledged"] = unacked
    return dict(sorted(shown.items()))


def _home_view(view: bytes, detailed: bool) -> dict[str, Any]:
    shown: dict[str, Any] = json.loads(view)
    if not detailed:
        for name in DETAIL_FIELDS:
            shown.pop(name, None)
    return shown
