"""`/api/vhosts`: list, create, update and delete virtual hosts."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from ..session import open_sessions
from . import metadata_writes
from .access import require_admin, visible_vhosts
from .account_bodies import checked_vhost
from .cluster_totals import remote_counts
from .context import Context, Reply, Route, not_found_unless, ok
from .figures import QueueFigures, total
from .listing import list_response, select_columns
from .queue_view import message_stats
from .rates import with_details
from .state import vhost_key

if TYPE_CHECKING:
    from ..queues.classic import ClassicQueue


def vhost_json(
    ctx: Context, name: str, all_figures: dict[ClassicQueue, QueueFigures]
) -> dict[str, Any]:
    metadata = ctx.state.registry.metadata(name)
    figures = [f for q, f in all_figures.items() if q.vhost == name]
    figure = total(figures)
    had_consumers = any(q.had_consumers for q in ctx.broker.vhosts[name].queues.values())
    key = vhost_key(name)
    shown: dict[str, Any] = {
        "cluster_state": {ctx.broker.config.node_name: "running"},
        "default_queue_type": metadata.default_queue_type,
        "description": metadata.description,
    }
    # Its queues homed on other nodes count too, with what those nodes last reported.
    remote = list(ctx.broker.vhosts[name].remote_queues.values())
    messages, unacked, _ = remote_counts(ctx.broker, remote)
    # RabbitMQ shows a vhost's statistics once it has queues or connections.
    active = (
        bool(figures)
        or bool(remote)
        or any(s.vhost is not None and s.vhost.name == name for s in open_sessions(ctx.broker))
    )
    stats = message_stats(figure, ctx.state, key, had_consumers)
    if stats:
        shown["message_stats"] = stats
    if active:
        counts = {
            "messages": figure.messages + messages,
            "messages_ready": figure.ready + messages - unacked,
            "messages_unacknowledged": figure.unacked + unacked,
        }
        shown.update(with_details(counts, ctx.state.rates, key))
    shown["metadata"] = {"description": metadata.description, "tags": list(metadata.tags)}
    shown["name"] = name
    if active:
        shown.update(with_details({"recv_oct": 0, "send_oct": 0}, ctx.state.rates, key))
    shown["tags"] = list(metadata.tags)
    shown["tracing"] = metadata.tracing
    return shown


def list_vhosts(ctx: Context) -> Reply:
    figures = ctx.state.figures()
    items = [vhost_json(ctx, name, figures) for name in visible_vhosts(ctx.broker, ctx.caller)]
    return ok(list_response(items, ctx.query, default_sort=("name",)))


def show(ctx: Context) -> Reply:
    name = ctx.param("vhost")
    not_found_unless(name in ctx.broker.vhosts)
    if not ctx.caller.is_admin and name not in visible_vhosts(ctx.broker, ctx.caller):
        require_admin(ctx.caller)
    return ok(select_columns(vhost_json(ctx, name, ctx.state.figures()), ctx.query.get("columns")))


def put(ctx: Context) -> Reply | Awaitable[Reply]:
    require_admin(ctx.caller)
    name = ctx.param("vhost")
    return metadata_writes.put_vhost(ctx, name, checked_vhost(ctx.json_body()))


def delete(ctx: Context) -> Reply | Awaitable[Reply]:
    require_admin(ctx.caller)
    name = ctx.param("vhost")
    not_found_unless(name in ctx.broker.vhosts)
    return metadata_writes.delete_vhost(ctx, name)


ROUTES: list[Route] = [
    Route("api/vhosts", {"GET": list_vhosts}),
    Route("api/vhosts/{vhost}", {"GET": show, "PUT": put, "DELETE": delete}),
]
