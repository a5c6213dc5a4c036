"""`/api/exchanges`: list, declare, delete, publish, and the bindings of an exchange."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from ..amqp.errors import AMQPError
from ..declare_rules import BASIC_PUBLISH
from ..queues import queue_type
from . import metadata_writes
from .access import login_vhosts
from .api_queues import check_permission, truthy
from .context import (
    Context,
    Reply,
    Route,
    body_flag,
    not_found_unless,
    ok,
    require_keys,
)
from .errors import bad_request
from .exchange_view import exchange_json, vhost_bindings
from .listing import list_response, select_columns
from .message_view import message_from_json, properties_from_json

if TYPE_CHECKING:
    from ..exchanges.exchange import Exchange
    from ..vhost import VirtualHost

# The default exchange has no name; URLs call it amq.default.
DEFAULT_EXCHANGE_IN_URLS = "amq.default"


def exchange_name(in_url: str) -> str:
    return "" if in_url == DEFAULT_EXCHANGE_IN_URLS else in_url


def _exchange(ctx: Context) -> tuple[VirtualHost, Exchange]:
    vhost = ctx.vhost()
    exchange = vhost.exchanges.get(exchange_name(ctx.param("name")))
    not_found_unless(exchange is not None)
    assert exchange is not None
    return vhost, exchange


def _list(ctx: Context, vhosts: list[str]) -> Reply:
    items: list[dict[str, Any]] = []
    for name in vhosts:
        vhost = ctx.broker.vhosts[name]
        items.extend(exchange_json(e, name, ctx.state) for e in vhost.exchanges.values())
    return ok(list_response(items, ctx.query))


def list_all(ctx: Context) -> Reply:
    return _list(ctx, login_vhosts(ctx.broker, ctx.caller))


def list_vhost(ctx: Context) -> Reply:
    return _list(ctx, [ctx.vhost().name])


def show(ctx: Context) -> Reply:
    vhost, exchange = _exchange(ctx)
    return ok(
        select_columns(
            exchange_json(exchange, vhost.name, ctx.state, detailed=True), ctx.query.get("columns")
        )
    )


def declare(ctx: Context) -> Reply | Awaitable[Reply]:
    vhost = ctx.vhost_to_write()
    name = exchange_name(ctx.param("name"))
    body = ctx.json_body()
    arguments = body.get("arguments") or {}
    if not isinstance(arguments, dict):
        raise bad_request("arguments should be an object")
    check_permission(ctx, "configure", vhost.name, name, "exchange")
    type_name = str(body.get("type", "direct"))
    durable = body_flag(body, "durable")
    auto_delete = body_flag(body, "auto_delete")
    internal = body_flag(body, "internal")
    return metadata_writes.declare_exchange(
        ctx,
        vhost,
        name,
        type_name,
        durable=durable,
        auto_delete=auto_delete,
        internal=internal,
        arguments=dict(arguments),
    )


def delete(ctx: Context) -> Reply | Awaitable[Reply]:
    vhost, exchange = _exchange(ctx)
    check_permission(ctx, "configure", vhost.name, exchange.name, "exchange")
    if_unused = truthy(ctx.query.get("if-unused"))
    return metadata_writes.delete_exchange(ctx, vhost, exchange, if_unused)


def publish(ctx: Context) -> Reply:
    """POST .../publish: route one message; answers whether it reached any queue."""
    vhost = ctx.vhost()
    name = exchange_name(ctx.param("name"))
    body = ctx.json_body()
    require_keys(body, "routing_key", "properties", "payload", "payload_encoding")
    routing_key = body["routing_key"]
    if not isinstance(routing_key, str) or not isinstance(body["payload"], str):
        raise bad_request("routing_key and payload should be strings")
    properties = properties_from_json(body["properties"])
    if properties.user_id is not None and properties.user_id != ctx.caller.name:
        raise bad_request(
            f"user_id property set to '{properties.user_id}' but authenticated user was "
            f"'{ctx.caller.name}'"
        )
    message = message_from_json(
        name, routing_key, properties, body["payload"], str(body["payload_encoding"])
    )
    check_permission(ctx, "write", vhost.name, name, "exchange")
    try:
        headers = message.properties.headers if message.has_flags else None
        queues = vhost.route(name, routing_key, headers, BASIC_PUBLISH)
    except AMQPError as error:
        # RabbitMQ reports a failed publish with the whole reply text, code included.
        raise bad_request(str(error)) from None
    queue_type.deliver(vhost, queues, message)
    return ok({"routed": bool(queues)})


def _bindings_where(ctx: Context, match: Any) -> Reply:
    vhost, exchange = _exchange(ctx)
    found = [b for b in vhost_bindings(vhost) if match(b, exchange.name)]
    return ok(list_response(found, ctx.query, pageable=False, default_sort=()))


def bindings_as_source(ctx: Context) -> Reply:
    return _bindings_where(ctx, lambda b, name: b["source"] == name)


def bindings_as_destination(ctx: Context) -> Reply:
    return _bindings_where(
        ctx, lambda b, name: b["destination_type"] == "exchange" and b["destination"] == name
    )


ROUTES = [
    Route("api/exchanges", {"GET": list_all}),
    Route("api/exchanges/{vhost}", {"GET": list_vhost}),
    Route("api/exchanges/{vhost}/{name}", {"GET": show, "PUT": declare, "DELETE": delete}),
    Route("api/exchanges/{vhost}/{name}/publish", {"POST": publish}),
    Route("api/exchanges/{vhost}/{name}/bindings/source", {"GET": bindings_as_source}),
    Route("api/exchanges/{vhost}/{name}/bindings/destination", {"GET": bindings_as_destination}),
]
