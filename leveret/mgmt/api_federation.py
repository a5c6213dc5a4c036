"""`/api/federation-links`: the federation links of the cluster, with RabbitMQ's fields.

This node's links come from `broker.federation`, the other nodes' from their gossip reports.
Beyond RabbitMQ's fields, a running link says whether it is pulling now or waiting for local
demand (`demand`: consuming | waiting).
"""

from __future__ import annotations

from typing import Any

from .access import require_monitor, require_vhost, visible_vhosts
from .cluster_link import cluster_control
from .context import NO_CONTENT, Context, Reply, Route, not_found_unless, ok
from .listing import list_response


def _described(ctx: Context, vhost: str | None, down_only: bool = False) -> list[dict[str, Any]]:
    links = ctx.broker.federation
    found = links.describe() if links is not None else []
    control = cluster_control(ctx.broker)
    if control is not None:
        found.extend(control.peer_links())
    allowed = set(visible_vhosts(ctx.broker, ctx.caller))
    return [
        link
        for link in found
        if link["vhost"] in allowed
        and (vhost is None or link["vhost"] == vhost)
        and (not down_only or link["status"] != "running")
    ]


def list_links(ctx: Context) -> Reply:
    return ok(list_response(_described(ctx, None), ctx.query, default_sort=("vhost", "queue")))


def list_vhost_links(ctx: Context) -> Reply:
    vhost = ctx.param("vhost")
    require_vhost(ctx.broker, ctx.caller, vhost)
    return ok(list_response(_described(ctx, vhost), ctx.query, default_sort=("vhost", "queue")))


def list_down(ctx: Context) -> Reply:
    return ok(list_response(_described(ctx, None, True), ctx.query, default_sort=("vhost",)))


def list_vhost_down(ctx: Context) -> Reply:
    vhost = ctx.param("vhost")
    require_vhost(ctx.broker, ctx.caller, vhost)
    return ok(list_response(_described(ctx, vhost, True), ctx.query, default_sort=("vhost",)))


def restart_link(ctx: Context) -> Reply:
    require_monitor(ctx.caller)
    vhost = ctx.param("vhost")
    require_vhost(ctx.broker, ctx.caller, vhost)
    links = ctx.broker.federation
    not_found_unless(links is not None and links.restart(vhost, ctx.param("id")))
    return Reply(NO_CONTENT)


ROUTES = [
    Route("api/federation-links", {"GET": list_links}),
    Route("api/federation-links/state/down", {"GET": list_down}),
    Route("api/federation-links/state/down/{vhost}", {"GET": list_vhost_down}),
    Route("api/federation-links/{vhost}", {"GET": list_vhost_links}),
    Route(
        "api/federation-links/vhost/{vhost}/{id}/{node}/restart",
        {"DELETE": restart_link},
    ),
]
