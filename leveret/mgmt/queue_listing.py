"""The queue listing (GET /api/queues[/{vhost}]): this node's queues and those homed on other
nodes, paged before rendering when sorted by names."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from ..queues.remote import RemoteQueue
from . import remote_queue_ops
from .cluster_link import cluster_control
from .context import Context, Reply, ok, truthy
from .listing import list_response, page_of, pages_by_name
from .queue_view import queue_basic_json, queue_json
from .remote_queue_view import remote_queue_json

if TYPE_CHECKING:
    from ..queues.classic import ClassicQueue
    from .figures import QueueFigures


def list_queues(ctx: Context, vhosts: list[str]) -> Reply | Awaitable[Reply]:
    """GET /api/queues[/{vhost}]: the queues of `vhosts`, local and homed on other nodes."""
    if pages_by_name(ctx.query):
        return _list_page(ctx, vhosts)
    figures = ctx.state.figures()
    items = _local_items(ctx, [(queue, figure) for queue, figure in figures.items()], vhosts)
    remotes = _remote_queues(ctx, vhosts)
    if not remotes:
        return ok(list_response(items, ctx.query))

    async def with_remote_queues() -> Reply:
        items.extend(await _remote_items(ctx, remotes))
        return ok(list_response(items, ctx.query))

    return with_remote_queues()


def _list_page(ctx: Context, vhosts: list[str]) -> Reply | Awaitable[Reply]:
    """A page sorted by names: chosen from the names alone, then only its queues are rendered
    (a node with 10,000 queues would otherwise render them all for a page of 100)."""
    wanted = set(vhosts)
    named: list[dict[str, Any]] = [
        {"name": queue.name, "vhost": queue.vhost, _QUEUE: queue}
        for vhost in ctx.broker.vhosts.values()
        if vhost.name in wanted
        for queue in vhost.queues.values()
    ]
    named.extend(
        {"name": remote.name, "vhost": remote.vhost, _QUEUE: remote}
        for remote in _remote_queues(ctx, vhosts)
    )
    page = page_of(named, ctx.query)
    chosen = [item[_QUEUE] for item in page.items]
    local = [queue for queue in chosen if not isinstance(queue, RemoteQueue)]
    figures = ctx.state.figures_of(local)
    remotes = [queue for queue in chosen if isinstance(queue, RemoteQueue)]
    columns = ctx.query.get("columns")

    def in_page_order(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        by_key = {(item["vhost"], item["name"]): item for item in items}
        return [by_key[queue.vhost, queue.name] for queue in chosen]

    items = _local_items(ctx, [(queue, figures[queue]) for queue in local], vhosts)
    if not remotes:
        return ok(page.answer(in_page_order(items), columns))

    async def with_remote_queues() -> Reply:
        items.extend(await _remote_items(ctx, remotes))
        return ok(page.answer(in_page_order(items), columns))

    return with_remote_queues()


# The key of a listing's queue object in the name-only items a page is chosen from (no field of
# the API's has a NUL in its name).
_QUEUE = "\x00queue"


def _local_items(
    ctx: Context, figures: list[tuple[ClassicQueue, QueueFigures]], vhosts: list[str]
) -> list[dict[str, Any]]:
    node = ctx.broker.config.node_name
    plain = truthy(ctx.query.get("disable_stats"))
    totals = truthy(ctx.query.get("enable_queue_totals"))
    wanted = set(vhosts)
    return [
        queue_basic_json(queue, figure, ctx.state, node, totals=totals)
        if plain
        else queue_json(queue, figure, ctx.state, node)
        for queue, figure in figures
        if queue.vhost in wanted
    ]


def _remote_queues(ctx: Context, vhosts: list[str]) -> list[RemoteQueue]:
    return [
        remote
        for vhost_name in vhosts
        if (vhost := ctx.broker.vhosts.get(vhost_name)) is not None
        for remote in vhost.remote_queues.values()
    ]


async def _remote_items(ctx: Context, remotes: list[RemoteQueue]) -> list[dict[str, Any]]:
    """Queues homed on other nodes, as their home nodes show them when they answer in time."""
    plain = truthy(ctx.query.get("disable_stats"))
    totals = truthy(ctx.query.get("enable_queue_totals"))
    reports = cluster_control(ctx.broker)
    live = await remote_queue_ops.live_counts(ctx.broker, remotes, view=not plain)
    return [
        remote_queue_json(
            remote,
            reports,
            ctx.state,
            totals=totals or not plain,
            live=live.get((remote.vhost, remote.name)),
        )
        for remote in remotes
    ]
