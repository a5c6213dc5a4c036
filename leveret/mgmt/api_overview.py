"""`/api/overview`, `/api/nodes`, `/api/cluster-name`, `/api/extensions`."""

from __future__ import annotations

import time

from .access import login_vhosts, require_admin, require_monitor
from .api_queues import truthy
from .context import NO_CONTENT, Context, Reply, Route, not_found_unless, ok, require_keys
from .errors import bad_request
from .history import add_asked_samples
from .listing import list_response, select_columns
from .node_view import node_json, overview_json
from .state import NODE_KEY


def overview(ctx: Context) -> Reply:
    vhosts = (
        list(ctx.broker.vhosts) if ctx.caller.is_admin else login_vhosts(ctx.broker, ctx.caller)
    )
    shown = overview_json(ctx.broker, ctx.state, ctx.caller, vhosts)
    add_asked_samples(
        ctx.state.history,
        NODE_KEY,
        ctx.query,
        shown.get("message_stats"),
        shown.get("queue_totals") or None,
        time.time(),
    )
    return ok(select_columns(shown, ctx.query.get("columns")))


def list_nodes(ctx: Context) -> Reply:
    require_monitor(ctx.caller)
    return ok(
        list_response(
            [node_json(ctx.broker, ctx.state)], ctx.query, pageable=False, default_sort=("name",)
        )
    )


def show_node(ctx: Context) -> Reply:
    require_monitor(ctx.caller)
    not_found_unless(ctx.param("node") == ctx.broker.config.node_name)
    shown = node_json(ctx.broker, ctx.state, memory=truthy(ctx.query.get("memory")))
    return ok(select_columns(shown, ctx.query.get("columns")))


def cluster_name(ctx: Context) -> Reply:
    return ok({"name": ctx.broker.config.cluster_name})


def set_cluster_name(ctx: Context) -> Reply:
    require_admin(ctx.caller)
    body = ctx.json_body()
    require_keys(body, "name")
    if not isinstance(body["name"], str) or not body["name"]:
        raise bad_request("cluster name should be a non-empty string")
    ctx.broker.config.cluster_name = body["name"]
    return Reply(NO_CONTENT)


def extensions(ctx: Context) -> Reply:
    return ok([])


ROUTES = [
    Route("api/overview", {"GET": overview}),
    Route("api/nodes", {"GET": list_nodes}),
    Route("api/nodes/{node}", {"GET": show_node}),
    Route("api/cluster-name", {"GET": cluster_name, "PUT": set_cluster_name}),
    Route("api/extensions", {"GET": extensions}),
]
