"""`/api/definitions`: export and import a node's (or one vhost's) definitions in RabbitMQ's
JSON."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any
from urllib.parse import quote

from .. import __version__
from ..broker import Broker
from ..exchanges.exchange import is_predeclared
from . import definitions_import
from .access import require_admin, require_vhost
from .account_bodies import HASHING_ALGORITHM
from .context import Context, Reply, Route
from .definitions_input import (
    read_document,
)
from .errors import ApiError, bad_request
from .json_values import jsonable
from .node_view import COMPATIBLE_RABBITMQ_VERSION, PRODUCT_NAME

# --- export -----------------------------------------------------------------------------------


def _queues(broker: Broker, vhost: str, with_vhost: bool) -> list[dict[str, Any]]:
    """Every queue of the cluster in `vhost` (this node's, then the other nodes'), as RabbitMQ
    exports them whatever node is asked; exclusive queues die with their connection, so none."""
    found = []
    model = broker.vhosts[vhost]
    declared = [
        (queue.name, queue.durable, queue.auto_delete, queue.arguments)
        for queue in model.queues.values()
        if queue.exclusive_owner is None
    ] + [
        (remote.name, remote.decl.durable, remote.decl.auto_delete, remote.decl.arguments)
        for remote in model.remote_queues.values()
        if remote.exclusive_owner is None
    ]
    for name, durable, auto_delete, arguments in declared:
        entry: dict[str, Any] = {"name": name}
        if with_vhost:
            entry["vhost"] = vhost
        entry.update(
            {"durable": durable, "auto_delete": auto_delete, "arguments": jsonable(arguments)}
        )
        found.append(entry)
    return found


def _exchanges(broker: Broker, vhost: str, with_vhost: bool) -> list[dict[str, Any]]:
    found = []
    for exchange in broker.vhosts[vhost].exchanges.values():
        if not exchange.name or is_predeclared(exchange.name):
            continue
        entry: dict[str, Any] = {"name": exchange.name}
        if with_vhost:
            entry["vhost"] = vhost
        entry.update(
            {
                "type": exchange.type,
                "durable": exchange.durable,
                "auto_delete": exchange.auto_delete,
                "internal": exchange.internal,
                "arguments": jsonable(dict(exchange.arguments)),
            }
        )
        found.append(entry)
    return found


def _bindings(broker: Broker, vhost: str, with_vhost: bool) -> list[dict[str, Any]]:
    found = []
    for exchange in broker.vhosts[vhost].exchanges.values():
        for binding in exchange.bindings():
            entry: dict[str, Any] = {"source": binding.source}
            if with_vhost:
                entry["vhost"] = vhost
            entry.update(
                {
                    "destination": binding.destination,
                    "destination_type": binding.destination_kind,
                    "routing_key": binding.routing_key,
                    "arguments": jsonable(binding.argument_table()),
                }
            )
            found.append(entry)
    found.sort(
        key=lambda b: (b["source"], b["destination_type"], b["destination"], b["routing_key"])
    )
    return found


def export_all(ctx: Context) -> Reply:
    require_admin(ctx.caller)
    broker, registry = ctx.broker, ctx.state.registry
    users = []
    for user in broker.users.values():
        users.append(
            {
                "name": user.name,
                "password_hash": user.password_hash,
                "hashing_algorithm": HASHING_ALGORITHM,
                "tags": list(user.tags),
                "limits": dict(registry.user_limits.get(user.name, {})),
            }
        )
    # RabbitMQ 3.10 exports vhosts by name only, and no operator policies.
    vhosts = [{"name": name} for name in broker.vhosts]
    document: dict[str, Any] = {
        "rabbit_version": COMPATIBLE_RABBITMQ_VERSION,
        "rabbitmq_version": COMPATIBLE_RABBITMQ_VERSION,
        "product_name": PRODUCT_NAME,
        "product_version": __version__,
        "users": users,
        "vhosts": vhosts,
        "permissions": [
            {"user": u, "vhost": v, "configure": p.configure, "write": p.write, "read": p.read}
            for (u, v), p in broker.permissions.items()
        ],
        "topic_permissions": [
            {"user": u, "vhost": v, "exchange": e, "write": w, "read": r}
            for (u, v, e), (w, r) in registry.topic_permissions.items()
        ],
        "parameters": [p.as_json() for p in registry.parameters()],
        "global_parameters": [
            {"name": n, "value": v} for n, v in registry.global_parameters.items()
        ],
        "policies": [p.as_json() for p in registry.policies("policy")],
        "queues": [q for name in broker.vhosts for q in _queues(broker, name, True)],
        "exchanges": [e for name in broker.vhosts for e in _exchanges(broker, name, True)],
        "bindings": [b for name in broker.vhosts for b in _bindings(broker, name, True)],
    }
    return _download(ctx, document)


def export_vhost(ctx: Context) -> Reply:
    require_admin(ctx.caller)
    vhost = ctx.param("vhost")
    if vhost not in ctx.broker.vhosts:
        raise bad_request("vhost_not_found")
    registry = ctx.state.registry
    document = {
        "rabbit_version": COMPATIBLE_RABBITMQ_VERSION,
        "parameters": [p.as_json() for p in registry.parameters(vhost=vhost)],
        "policies": [p.as_json() for p in registry.policies("policy", vhost)],
        "queues": _queues(ctx.broker, vhost, False),
        "exchanges": _exchanges(ctx.broker, vhost, False),
        "bindings": _bindings(ctx.broker, vhost, False),
    }
    return _download(ctx, document)


def _download(ctx: Context, document: dict[str, Any]) -> Reply:
    reply = Reply(200, document)
    filename = ctx.query.get("download")
    if filename:
        safe = quote(filename, safe="._-")
        reply.headers.append(("content-disposition", f"attachment; filename={safe}"))
    return reply


# --- import -----------------------------------------------------------------------------------


def _import(ctx: Context, document: dict[str, Any], forced_vhost: str | None) -> Awaitable[Reply]:
    return definitions_import.import_definitions(ctx, document, forced_vhost)


def import_all(ctx: Context) -> Awaitable[Reply]:
    require_admin(ctx.caller)
    return _import(ctx, read_document(ctx), None)


def import_vhost(ctx: Context) -> Awaitable[Reply]:
    require_admin(ctx.caller)
    vhost = ctx.param("vhost")
    if vhost not in ctx.broker.vhosts:
        raise ApiError(404, "not_found", "vhost_not_found")
    require_vhost(ctx.broker, ctx.caller, vhost)
    return _import(ctx, read_document(ctx), vhost)


ROUTES: list[Route] = [
    Route("api/definitions", {"GET": export_all, "POST": import_all}),
    Route("api/definitions/{vhost}", {"GET": export_vhost, "POST": import_vhost}),
]
