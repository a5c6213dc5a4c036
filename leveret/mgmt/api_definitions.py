"""`/api/definitions`: export and import a node's (or one vhost's) definitions in RabbitMQ's
JSON."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any
from urllib.parse import quote

from .. import __version__
from ..amqp.errors import AMQPError
from ..broker import Broker
from ..declare_rules import EXCHANGE_BIND, EXCHANGE_DECLARE, QUEUE_BIND, QUEUE_DECLARE
from ..definitions_registry import PolicyKind
from ..exchanges.exchange import is_predeclared
from . import shared_import
from .access import require_admin, require_vhost
from .account_bodies import HASHING_ALGORITHM
from .api_policies import apply_parameter
from .api_queues import ApiOwner
from .api_users import apply_permission, apply_topic_permission, apply_user
from .context import NO_CONTENT, Context, Reply, Route
from .definitions_input import (
    items,
    key_missing,
    read_document,
    vhost_description_and_tags,
    vhost_of,
)
from .errors import ApiError, bad_request
from .json_values import jsonable
from .node_view import COMPATIBLE_RABBITMQ_VERSION, PRODUCT_NAME
from .policy_validation import PolicyInvalid, parse_policy

# --- export -----------------------------------------------------------------------------------


def _queues(broker: Broker, vhost: str, with_vhost: bool) -> list[dict[str, Any]]:
    found = []
    for queue in broker.vhosts[vhost].queues.values():
        if queue.exclusive_owner is not None:
            continue
        entry: dict[str, Any] = {"name": queue.name}
        if with_vhost:
            entry["vhost"] = vhost
        entry.update(
            {
                "durable": queue.durable,
                "auto_delete": queue.auto_delete,
                "arguments": jsonable(queue.arguments),
            }
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


def import_definitions(
    ctx: Context, document: dict[str, Any], forced_vhost: str | None = None
) -> None:
    """Apply definitions in dependency order; objects that already exist are left as they are,
    and bindings whose ends are missing are skipped, as RabbitMQ does."""
    if forced_vhost is None:
        _import_access(ctx, document)
    _import_policies(ctx, document, forced_vhost)
    _import_queues(ctx, document, forced_vhost)
    _import_exchanges(ctx, document, forced_vhost)
    _import_bindings(ctx, document, forced_vhost)


def _import_access(ctx: Context, document: dict[str, Any]) -> None:
    registry = ctx.state.registry
    for user in items(document, "users"):
        apply_user(ctx, str(user["name"]), user)
    for entry in items(document, "vhosts"):
        name = str(entry["name"])
        ctx.broker.add_vhost(name)
        metadata = registry.metadata(name)
        description, tags = vhost_description_and_tags(entry)
        if description is not None:
            metadata.description = description
        if tags is not None:
            metadata.tags = tags
    for permission in items(document, "permissions"):
        apply_permission(ctx, str(permission["user"]), str(permission["vhost"]), permission)
    for topic in items(document, "topic_permissions"):
        apply_topic_permission(ctx, str(topic["user"]), str(topic["vhost"]), topic)
    for parameter in items(document, "global_parameters"):
        registry.global_parameters[str(parameter["name"])] = parameter.get("value")


def _import_policies(ctx: Context, document: dict[str, Any], forced_vhost: str | None) -> None:
    for parameter in items(document, "parameters"):
        vhost_name = vhost_of(ctx, parameter, forced_vhost)
        apply_parameter(
            ctx, str(parameter["component"]), vhost_name, str(parameter["name"]), parameter
        )
    kinds: tuple[tuple[PolicyKind, str], ...] = (
        ("policy", "policies"),
        ("operator_policy", "operator_policies"),
    )
    for kind, key in kinds:
        for item in items(document, key):
            vhost_name = vhost_of(ctx, item, forced_vhost)
            name = str(item.get("name", ""))
            try:
                policy = parse_policy(kind, vhost_name, name, item)
            except PolicyInvalid as invalid:
                raise bad_request(f"{invalid} ({vhost_name}/{name})") from None
            ctx.state.registry.set_policy(kind, policy)


def _import_queues(ctx: Context, document: dict[str, Any], forced_vhost: str | None) -> None:
    for queue in items(document, "queues"):
        vhost = ctx.broker.vhosts[vhost_of(ctx, queue, forced_vhost)]
        name = str(queue["name"])
        if name in vhost.queues:
            continue
        try:
            vhost.declare_queue(
                name,
                passive=False,
                durable=queue.get("durable", True) is True,
                exclusive=False,
                auto_delete=queue.get("auto_delete", False) is True,
                arguments=dict(queue.get("arguments") or {}),
                owner=ApiOwner(),
                method=QUEUE_DECLARE,
            )
        except AMQPError as error:
            raise bad_request(error.text) from None


def _import_exchanges(ctx: Context, document: dict[str, Any], forced_vhost: str | None) -> None:
    for exchange in items(document, "exchanges"):
        vhost = ctx.broker.vhosts[vhost_of(ctx, exchange, forced_vhost)]
        name = str(exchange["name"])
        if name in vhost.exchanges:
            continue
        try:
            vhost.declare_exchange(
                name,
                str(exchange.get("type", "direct")),
                passive=False,
                durable=exchange.get("durable", True) is True,
                auto_delete=exchange.get("auto_delete", False) is True,
                internal=exchange.get("internal", False) is True,
                arguments=dict(exchange.get("arguments") or {}),
                method=EXCHANGE_DECLARE,
            )
        except AMQPError as error:
            raise bad_request(error.text) from None


def _import_bindings(ctx: Context, document: dict[str, Any], forced_vhost: str | None) -> None:
    for binding in items(document, "bindings"):
        vhost = ctx.broker.vhosts[vhost_of(ctx, binding, forced_vhost)]
        kind = str(binding.get("destination_type", "queue"))
        source, destination = str(binding["source"]), str(binding["destination"])
        ends = vhost.queues if kind == "queue" else vhost.exchanges
        if not source or source not in vhost.exchanges or destination not in ends:
            continue
        method = QUEUE_BIND if kind == "queue" else EXCHANGE_BIND
        try:
            vhost.bind(
                source,
                destination,
                kind,
                str(binding.get("routing_key", "")),
                dict(binding.get("arguments") or {}),
                method,
            )
        except AMQPError as error:
            raise bad_request(error.text) from None


def _import(
    ctx: Context, document: dict[str, Any], forced_vhost: str | None
) -> Reply | Awaitable[Reply]:
    if ctx.broker.shared is not None:
        return shared_import.import_definitions(ctx, document, forced_vhost)
    try:
        import_definitions(ctx, document, forced_vhost)
    except KeyError as missing:
        raise key_missing(missing) from None
    return Reply(NO_CONTENT)


def import_all(ctx: Context) -> Reply | Awaitable[Reply]:
    require_admin(ctx.caller)
    return _import(ctx, read_document(ctx), None)


def import_vhost(ctx: Context) -> Reply | Awaitable[Reply]:
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
