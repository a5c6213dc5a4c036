"""A queue as RabbitMQ 3.10's management API shows a classic queue."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from .connection_view import consumer_json
from .figures import QueueFigures
from .history import SampleRange, add_asked_samples
from .json_values import jsonable, rfc3339_millis
from .rates import with_details
from .state import queue_key

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..definitions_registry import DefinitionsRegistry, Policy
    from ..queues.classic import ClassicQueue
    from .state import ManagementState

# Keys an operator policy caps: where both a policy and an operator policy set one, the lower wins.
_CAPPED = frozenset(
    {
        "max-length",
        "max-length-bytes",
        "message-ttl",
        "expires",
        "delivery-limit",
        "max-in-memory-length",
        "max-in-memory-bytes",
    }
)
_DELIVERY_STATS = (
    "ack",
    "deliver",
    "deliver_get",
    "deliver_no_ack",
    "get",
    "get_empty",
    "get_no_ack",
    "redeliver",
)


def effective_definition(policy: Policy | None, operator_policy: Policy | None) -> dict[str, Any]:
    merged: dict[str, Any] = dict(policy.definition) if policy is not None else {}
    if operator_policy is not None:
        for key, value in operator_policy.definition.items():
            current = merged.get(key)
            if key in _CAPPED and isinstance(current, int) and isinstance(value, int):
                merged[key] = min(current, value)
            else:
                merged[key] = value
    return merged


def policies_of(
    registry: DefinitionsRegistry, vhost: str, kind: str, name: str
) -> tuple[Policy | None, Policy | None]:
    return (
        registry.effective_policy("policy", vhost, kind, name),  # type: ignore[arg-type]
        registry.effective_policy("operator_policy", vhost, kind, name),  # type: ignore[arg-type]
    )


def message_stats(
    figure: QueueFigures, state: ManagementState, key: object, had_consumers: bool
) -> dict[str, Any]:
    """RabbitMQ shows publish counts once something was published, and delivery counts once
    something was delivered or consumed from the queue."""
    totals = figure.totals()
    shown: dict[str, int] = {}
    if figure.publish:
        shown["publish"] = totals["publish"]
    if figure.deliver_get or figure.get_empty or had_consumers:
        for name in _DELIVERY_STATS:
            shown[name] = totals[name]
    return with_details(dict(sorted(shown.items())), state.rates, key)  # type: ignore[arg-type]


def queue_json(
    queue: ClassicQueue,
    figure: QueueFigures,
    state: ManagementState,
    node: str,
    *,
    detailed: bool = False,
) -> dict[str, Any]:
    key = queue_key(queue)
    rates = state.rates
    policy, operator_policy = policies_of(state.registry, queue.vhost, "queue", queue.name)
    consumers = queue.consumers
    exclusive_consumer = next((c for c in consumers if c.exclusive), None)
    active = queue.active_consumer() if queue.single_active_consumer else None
    has_capacity = any(c.active for c in consumers)
    paged_out = max(figure.ready - figure.ready_in_memory, 0)
    ready_bytes_in_memory = (
        figure.ready_bytes * figure.ready_in_memory // figure.ready if figure.ready else 0
    )
    shown: dict[str, Any] = {
        "arguments": jsonable(queue.arguments),
        "auto_delete": queue.auto_delete,
        "consumer_capacity": 1.0 if has_capacity else 0,
        "consumer_utilisation": 1.0 if has_capacity else 0,
        "consumers": len(consumers),
        "durable": queue.durable,
        "effective_policy_definition": effective_definition(policy, operator_policy),
        "exclusive": queue.exclusive_owner is not None,
        "exclusive_consumer_tag": exclusive_consumer.tag
        if exclusive_consumer is not None
        else None,
        "head_message_timestamp": None,
        "idle_since": rfc3339_millis(state.last_active.get(key, time.time())),
        "memory": figure.message_bytes + 1024 * (1 + len(consumers)),
        "message_bytes": figure.message_bytes,
        "message_bytes_paged_out": figure.ready_bytes - ready_bytes_in_memory,
        "message_bytes_persistent": figure.persistent_bytes,
        "message_bytes_ram": ready_bytes_in_memory + figure.unacked_bytes,
        "message_bytes_ready": figure.ready_bytes,
        "message_bytes_unacknowledged": figure.unacked_bytes,
    }
    stats = message_stats(figure, state, key, queue.had_consumers)
    if stats:
        shown["message_stats"] = stats
    shown.update(with_details({"messages": figure.messages}, rates, key))
    shown["messages_paged_out"] = paged_out
    shown["messages_persistent"] = figure.persistent
    shown["messages_ram"] = figure.ready_in_memory + figure.unacked
    shown.update(with_details({"messages_ready": figure.ready}, rates, key))
    shown["messages_ready_ram"] = figure.ready_in_memory
    shown.update(with_details({"messages_unacknowledged": figure.unacked}, rates, key))
    shown["messages_unacknowledged_ram"] = figure.unacked
    shown.update(
        {
            "name": queue.name,
            "node": node,
            "operator_policy": operator_policy.name if operator_policy is not None else None,
            "policy": policy.name if policy is not None else None,
            "recoverable_slaves": None,
            "single_active_consumer_tag": active.tag if active is not None else None,
            "state": "running",
            "type": "stream" if queue.stream else "classic",
            "vhost": queue.vhost,
        }
    )
    if detailed:
        shown["consumer_details"] = [consumer_json(c, state, node) for c in consumers]
        shown["deliveries"] = []
        shown["incoming"] = []
    return shown


def queue_basic_json(
    queue: ClassicQueue, figure: QueueFigures, state: ManagementState, node: str, *, totals: bool
) -> dict[str, Any]:
    """`disable_stats=true`: the definition only, and message counts with `enable_queue_totals`."""
    policy, _ = policies_of(state.registry, queue.vhost, "queue", queue.name)
    shown: dict[str, Any] = {
        "arguments": jsonable(queue.arguments),
        "auto_delete": queue.auto_delete,
        "durable": queue.durable,
        "exclusive": queue.exclusive_owner is not None,
        "name": queue.name,
        "node": node,
        "state": "running",
        "type": "stream" if queue.stream else "classic",
        "vhost": queue.vhost,
    }
    if totals:
        shown["messages"] = figure.messages
        shown["messages_ready"] = figure.ready
        shown["messages_unacknowledged"] = figure.unacked
    if policy is not None:
        shown["policy"] = policy.name
    return dict(sorted(shown.items()))


def add_queue_samples(
    state: ManagementState, queue: ClassicQueue, query: Mapping[str, str], shown: dict[str, Any]
) -> None:
    """The samples a chart asked for; asking starts (or prolongs) the queue's history."""
    if not any(SampleRange.from_query(query, p) for p in ("msg_rates", "lengths")):
        return
    key = queue_key(queue)
    state.history.watch(key, time.monotonic())
    stats = shown.get("message_stats")
    add_asked_samples(
        state.history, key, query, stats if isinstance(stats, dict) else None, shown, time.time()
    )
