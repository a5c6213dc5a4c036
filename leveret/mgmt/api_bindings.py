"""`/api/bindings`: list bindings, and create or delete one between an exchange and a
destination."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any
from urllib.parse import quote, unquote

from ..declare_rules import EXCHANGE_BIND, EXCHANGE_UNBIND, QUEUE_BIND, QUEUE_UNBIND
from ..exchanges.base import Binding
from ..vhost import VirtualHost
from . import metadata_writes
from .access import login_vhosts
from .api_exchanges import exchange_name
from .api_queues import check_permission
from .context import Context, Reply, Route, not_found_unless, ok
from .errors import bad_request, not_authorised
from .exchange_view import binding_json, properties_key, vhost_bindings
from .listing import list_response

_KINDS = {"q": "queue", "e": "exchange"}


def list_all(ctx: Context) -> Reply:
    found: list[dict[str, Any]] = []
    for name in login_vhosts(ctx.broker, ctx.caller):
        found.extend(vhost_bindings(ctx.broker.vhosts[name]))
    return ok(list_response(found, ctx.query, pageable=False, default_sort=()))


def list_vhost(ctx: Context) -> Reply:
    return ok(
        list_response(list(vhost_bindings(ctx.vhost())), ctx.query, pageable=False, default_sort=())
    )


def _ends(ctx: Context, kind_letter: str) -> tuple[VirtualHost, str, str, str]:
    vhost = ctx.vhost()
    source = exchange_name(ctx.param("source"))
    destination = ctx.param("destination")
    kind = _KINDS[kind_letter]
    not_found_unless(source in vhost.exchanges)
    # A queue may live on another node of a cluster (never on a single node).
    not_found_unless(vhost.has_destination(kind, destination))
    return vhost, source, destination, kind


def _between(
    vhost: VirtualHost, source: str, destination: str, kind: str
) -> list[tuple[dict[str, Any], Binding | None]]:
    """The bindings from source to destination, each with the binding itself (None for the
    default exchange's implicit binding)."""
    if not source:
        if kind == "queue" and destination in vhost.queues:
            return [(binding_json(vhost.name, "", destination, "queue", destination, {}), None)]
        return []
    found: list[tuple[dict[str, Any], Binding | None]] = []
    for binding in vhost.exchanges[source].bindings():
        if binding.destination == destination and binding.destination_kind == kind:
            shown = binding_json(
                vhost.name, source, destination, kind, binding.routing_key, binding.argument_table()
            )
            found.append((shown, binding))
    found.sort(key=lambda pair: (pair[0]["routing_key"], pair[0]["properties_key"]))
    return found


def _lister(kind_letter: str) -> Any:
    def handler(ctx: Context) -> Reply:
        vhost, source, destination, kind = _ends(ctx, kind_letter)
        shown = [pair[0] for pair in _between(vhost, source, destination, kind)]
        return ok(list_response(shown, ctx.query, pageable=False, default_sort=()))

    return handler


def _creator(kind_letter: str) -> Any:
    def handler(ctx: Context) -> Reply | Awaitable[Reply]:
        vhost = ctx.vhost_to_write()
        source = exchange_name(ctx.param("source"))
        destination = ctx.param("destination")
        kind = _KINDS[kind_letter]
        body = ctx.json_body()
        routing_key = body.get("routing_key", "")
        arguments = body.get("arguments") or {}
        if not isinstance(routing_key, str) or not isinstance(arguments, dict):
            raise bad_request("routing_key should be a string and arguments an object")
        check_permission(ctx, "write", vhost.name, destination, kind)
        check_permission(ctx, "read", vhost.name, source, "exchange")
        method = QUEUE_BIND if kind == "queue" else EXCHANGE_BIND
        location = quote(destination, safe="") + "/" + properties_key(routing_key, arguments)
        created = Reply(201, headers=[("location", location)])
        return metadata_writes.bind(
            ctx, vhost, source, destination, kind, routing_key, dict(arguments), method, created
        )

    return handler


def _binding_of(
    ctx: Context, kind_letter: str
) -> tuple[VirtualHost, dict[str, Any], Binding | None]:
    vhost, source, destination, kind = _ends(ctx, kind_letter)
    wanted = ctx.param("props")
    # The key is URL-quoted in answers and decoded once more when it comes back in a path.
    found = [
        pair
        for pair in _between(vhost, source, destination, kind)
        if wanted in (pair[0]["properties_key"], unquote(pair[0]["properties_key"]))
    ]
    not_found_unless(bool(found))
    shown, binding = found[0]
    return vhost, shown, binding


def _shower(kind_letter: str) -> Any:
    def handler(ctx: Context) -> Reply:
        return ok(_binding_of(ctx, kind_letter)[1])

    return handler


def _deleter(kind_letter: str) -> Any:
    def handler(ctx: Context) -> Reply | Awaitable[Reply]:
        vhost, shown, binding = _binding_of(ctx, kind_letter)
        kind = shown["destination_type"]
        check_permission(ctx, "write", vhost.name, shown["destination"], kind)
        check_permission(ctx, "read", vhost.name, shown["source"], "exchange")
        if binding is None:
            # The default exchange's implicit bindings cannot be removed.
            raise not_authorised("Access refused.")
        method = QUEUE_UNBIND if kind == "queue" else EXCHANGE_UNBIND
        return metadata_writes.unbind(ctx, vhost, binding, method)

    return handler


ROUTES = [
    Route("api/bindings", {"GET": list_all}),
    Route("api/bindings/{vhost}", {"GET": list_vhost}),
]
for _letter in _KINDS:
    ROUTES += [
        Route(
            f"api/bindings/{{vhost}}/e/{{source}}/{_letter}/{{destination}}",
            {"GET": _lister(_letter), "POST": _creator(_letter)},
        ),
        Route(
            f"api/bindings/{{vhost}}/e/{{source}}/{_letter}/{{destination}}/{{props}}",
            {"GET": _shower(_letter), "DELETE": _deleter(_letter)},
        ),
    ]
