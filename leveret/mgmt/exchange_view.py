"""Exchanges and bindings as RabbitMQ's management API shows them, and binding property keys."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from ..exchanges.exchange import is_predeclared
from .json_values import jsonable

if TYPE_CHECKING:
    from ..exchanges.exchange import Exchange
    from ..vhost import VirtualHost
    from .state import ManagementState

INTERNAL_ACTOR = "rmq-internal"


def exchange_json(
    exchange: Exchange, vhost: str, state: ManagementState, *, detailed: bool = False
) -> dict[str, Any]:
    actor = (
        INTERNAL_ACTOR
        if is_predeclared(exchange.name)
        else state.actors.get(("exchange", vhost, exchange.name), "")
    )
    shown: dict[str, Any] = {
        "arguments": jsonable(dict(exchange.arguments)),
        "auto_delete": exchange.auto_delete,
        "durable": exchange.durable,
        "internal": exchange.internal,
        "name": exchange.name,
        "type": exchange.type,
        "user_who_performed_action": actor,
        "vhost": vhost,
    }
    if detailed:
        shown["incoming"] = []
        shown["outgoing"] = []
    return shown


def properties_key(routing_key: str, arguments: dict[str, Any]) -> str:
    """What names one binding in a URL: the quoted routing key, and a hash of its arguments."""
    if not routing_key and not arguments:
        return "~"
    quoted = quote(routing_key, safe="")
    if not arguments:
        return quoted
    canonical = json.dumps(jsonable(arguments), sort_keys=True, separators=(",", ":")).encode()
    digest = base64.urlsafe_b64encode(hashlib.sha256(canonical).digest()[:6]).decode("ascii")
    return f"{quoted}~{digest}"


def binding_json(
    vhost: str,
    source: str,
    destination: str,
    kind: str,
    routing_key: str,
    arguments: dict[str, Any],
) -> dict[str, Any]:
    shown_arguments = jsonable(arguments)
    return {
        "source": source,
        "vhost": vhost,
        "destination": destination,
        "destination_type": kind,
        "routing_key": routing_key,
        "arguments": shown_arguments,
        "properties_key": properties_key(routing_key, shown_arguments),
    }


def vhost_bindings(vhost: VirtualHost) -> Iterator[dict[str, Any]]:
    """Every binding of a vhost, the default exchange's implicit ones first, as RabbitMQ lists
    them."""
    for name in sorted(vhost.queues):
        yield binding_json(vhost.name, "", name, "queue", name, {})
    explicit = []
    for exchange in vhost.exchanges.values():
        for binding in exchange.bindings():
            explicit.append(
                binding_json(
                    vhost.name,
                    binding.source,
                    binding.destination,
                    binding.destination_kind,
                    binding.routing_key,
                    binding.argument_table(),
                )
            )
    explicit.sort(
        key=lambda b: (
            b["source"],
            b["destination_type"],
            b["destination"],
            b["routing_key"],
            b["properties_key"],
        )
    )
    yield from explicit
