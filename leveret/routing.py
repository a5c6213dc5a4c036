"""Routing of one published message to the names of the queues it must be enqueued on.

The default exchange sends a message to the queue named by its routing key. Any other exchange
asks its type for destinations; destinations that are exchanges are routed through in turn,
each exchange at most once, so cycles of exchange-to-exchange bindings end. An exchange whose
type finds no destination at all passes the message to its alternate exchange, if it has one
(alternate exchanges are subject to the same visited-once rule). Missing exchanges are skipped.
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from typing import Any

from leveret.exchanges.base import Targets, union_targets
from leveret.exchanges.exchange import DEFAULT_EXCHANGE, Exchange

_NOWHERE: frozenset[str] = frozenset()


def route(
    exchanges: Mapping[str, Exchange],
    exchange_name: str,
    routing_key: str,
    headers: Mapping[str, Any] | None,
    queues: Container[str],
    extra_routing_keys: Sequence[str] = (),
) -> frozenset[str]:
    """The names of the queues a message published to `exchange_name` reaches.

    `queues` holds the vhost's queue names (a set or a dict); only the default exchange needs
    it, since bindings always name existing queues. `extra_routing_keys` are the CC and BCC
    header keys of sender-selected distribution, routed like the routing key.
    """
    if exchange_name == DEFAULT_EXCHANGE:
        if not extra_routing_keys:
            return frozenset((routing_key,)) if routing_key in queues else _NOWHERE
        return frozenset(k for k in (routing_key, *extra_routing_keys) if k in queues)
    origin = exchanges.get(exchange_name)
    if origin is None:
        return _NOWHERE
    if extra_routing_keys:
        targets = _match(origin, routing_key, headers, extra_routing_keys)
    else:
        targets = origin.matcher.match(routing_key, headers)
    if targets.queues and not targets.exchanges:
        return targets.queues  # the common case: one exchange, queue bindings only
    return _route_through(exchanges, origin, targets, routing_key, headers, extra_routing_keys)


def _match(
    exchange: Exchange,
    routing_key: str,
    headers: Mapping[str, Any] | None,
    extra_routing_keys: Sequence[str],
) -> Targets:
    targets = exchange.matcher.match(routing_key, headers)
    if not extra_routing_keys:
        return targets
    parts = [targets] + [exchange.matcher.match(key, headers) for key in extra_routing_keys]
    return union_targets(parts)


def _route_through(
    exchanges: Mapping[str, Exchange],
    origin: Exchange,
    origin_targets: Targets,
    routing_key: str,
    headers: Mapping[str, Any] | None,
    extra_routing_keys: Sequence[str],
) -> frozenset[str]:
    reached: set[str] = set()
    visited = {origin.name}
    pending: list[tuple[Exchange, Targets | None]] = [(origin, origin_targets)]
    while pending:
        exchange, targets = pending.pop()
        if targets is None:
            targets = _match(exchange, routing_key, headers, extra_routing_keys)
        if targets.queues:
            reached.update(targets.queues)
        if targets.exchanges:
            next_names: frozenset[str] | tuple[str, ...] = targets.exchanges
        elif targets.queues:
            continue
        else:
            alternate = exchange.alternate_exchange
            if alternate is None:
                continue
            next_names = (alternate,)
        for name in next_names:
            if name in visited:
                continue
            visited.add(name)
            following = exchanges.get(name)
            if following is not None:
                pending.append((following, None))
    return frozenset(reached)
