"""Applying stored policies to a vhost's queues and exchanges, through the core's own resolution.

`DefinitionsRegistry` only stores policies; this is the bridge that makes them act, using the
queue's `apply_settings` and the core's `resolve` table. The broker subscribes it to the registry
and calls `apply_to_queue` when a queue is declared; the core owns the semantics.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from .definitions_registry import DefinitionsRegistry
from .queues.settings import resolve

if TYPE_CHECKING:
    from .exchanges.exchange import Exchange
    from .queues.classic import ClassicQueue
    from .vhost import VirtualHost


def apply_to_queue(registry: DefinitionsRegistry, queue: ClassicQueue) -> None:
    policy = registry.effective_policy("policy", queue.vhost, "queue", queue.name)
    operator = registry.effective_policy("operator_policy", queue.vhost, "queue", queue.name)
    queue.policy = policy.name if policy is not None else None
    queue.operator_policy = operator.name if operator is not None else None
    if queue.stream:
        queue.apply_policies(  # type: ignore[attr-defined]
            policy.definition if policy is not None else None,
            operator.definition if operator is not None else None,
        )
        return
    queue.apply_settings(
        resolve(
            queue.arguments,
            policy.definition if policy is not None else None,
            operator.definition if operator is not None else None,
        )
    )


def apply_to_exchange(registry: DefinitionsRegistry, vhost: str, exchange: Exchange) -> None:
    policy = registry.effective_policy("policy", vhost, "exchange", exchange.name)
    alternate = policy.definition.get("alternate-exchange") if policy is not None else None
    exchange.policy_alternate_exchange = alternate if isinstance(alternate, str) else None


def apply_policies(
    vhosts: Mapping[str, VirtualHost], registry: DefinitionsRegistry, vhost_name: str
) -> None:
    """Recompute every queue's and exchange's effective policy in one vhost."""
    vhost = vhosts.get(vhost_name)
    if vhost is None:
        return
    for queue in list(vhost.queues.values()):
        if not queue.deleted:
            apply_to_queue(registry, queue)
    for exchange in list(vhost.exchanges.values()):
        apply_to_exchange(registry, vhost_name, exchange)


def follow_policies(vhosts: Mapping[str, VirtualHost], registry: DefinitionsRegistry) -> None:
    """Re-apply a vhost's policies whenever a policy or operator policy of it changes."""

    def changed(what: str, vhost: str) -> None:
        if what in ("policy", "operator_policy"):
            apply_policies(vhosts, registry, vhost)

    registry.subscribe(changed)
