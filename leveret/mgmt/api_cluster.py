"""`/api/nodes` with every cluster member, and `/api/cluster/...` for `leveret ctl`'s cluster
commands. The cluster layer plugs in through `cluster_link.attach_cluster` (this package never
imports it).

Changes that need a Raft majority answer 202 with a ticket; `GET /api/cluster/tickets/{id}`
gives `{"state": "pending"}`, `{"state": "done", "result": ...}` or `{"state": "failed",
"error": ..., "reason": ...}`.
"""

from __future__ import annotations

from typing import Any

from .access import require_admin, require_monitor
from .api_queues import truthy
from .cluster_link import ClusterControl, cluster_control
from .context import Context, Reply, Route, not_found_unless, ok
from .errors import ApiError, object_not_found
from .listing import list_response, select_columns
from .node_view import node_json


def _control(ctx: Context) -> ClusterControl:
    control = cluster_control(ctx.broker)
    if control is None:
        raise ApiError(503, "unavailable", "clustering is not running on this node")
    return control


# -- nodes -------------------------------------------------------------------------------------


def _nodes(ctx: Context, memory: bool = False) -> list[dict[str, Any]]:
    local = node_json(ctx.broker, ctx.state, memory=memory)
    control = cluster_control(ctx.broker)
    if control is None:
        return [local]
    shown = []
    for name, entry in control.node_entries().items():
        if name == local["name"]:
            shown.append({**local, "cluster": entry["cluster"]})
        else:
            shown.append({"partitions": [], "os_pid": None, **entry})
    return shown


def list_nodes(ctx: Context) -> Reply:
    require_monitor(ctx.caller)
    return ok(list_response(_nodes(ctx), ctx.query, pageable=False, default_sort=("name",)))


def show_node(ctx: Context) -> Reply:
    require_monitor(ctx.caller)
    found = [
        node
        for node in _nodes(ctx, truthy(ctx.query.get("memory")))
        if node["name"] == ctx.param("node")
    ]
    not_found_unless(bool(found))
    return ok(select_columns(found[0], ctx.query.get("columns")))


# -- cluster -----------------------------------------------------------------------------------


def cluster_status(ctx: Context) -> Reply:
    require_monitor(ctx.caller)
    control = cluster_control(ctx.broker)
    if control is not None:
        return ok(control.status_report())
    node = ctx.broker.config.node_name
    return ok(
        {
            "cluster_name": ctx.broker.config.cluster_name,
            "disk_nodes": [node],
            "ram_nodes": [],
            "running_nodes": [node],
            "partitions": {},
            "alarms": [
                {"node": node, "resource": alarm, "type": "resource_alarm"}
                for alarm in sorted(ctx.broker.alarms)
            ],
            "raft": None,
            "node": node,
        }
    )


def _accepted(ticket: str) -> Reply:
    return Reply(202, {"ticket": ticket, "location": f"/api/cluster/tickets/{ticket}"})


def submit_command(ctx: Context) -> Reply:
    require_admin(ctx.caller)
    command = ctx.json_body(required=True)
    if not isinstance(command.get("op"), str):
        raise ApiError(400, "bad_request", 'a metadata command needs an "op"')
    return _accepted(_control(ctx).start_submit(command))


def read_barrier(ctx: Context) -> Reply:
    require_monitor(ctx.caller)
    return _accepted(_control(ctx).start_read_barrier())


def forget_node(ctx: Context) -> Reply:
    require_admin(ctx.caller)
    return _accepted(_control(ctx).start_forget(ctx.param("node")))


def show_ticket(ctx: Context) -> Reply:
    require_monitor(ctx.caller)
    outcome = _control(ctx).ticket(ctx.param("ticket"))
    if outcome is None:
        raise object_not_found()
    return ok(outcome)


def show_metadata(ctx: Context) -> Reply:
    require_monitor(ctx.caller)
    tables = _control(ctx).metadata(ctx.params.get("table"))
    if tables is None:
        raise object_not_found()
    return ok(tables)


# Listed before the overview's routes: for the same path the first route wins.
ROUTES = [
    Route("api/nodes", {"GET": list_nodes}),
    Route("api/nodes/{node}", {"GET": show_node}),
    Route("api/cluster/status", {"GET": cluster_status}),
    Route("api/cluster/commands", {"POST": submit_command}),
    Route("api/cluster/barrier", {"POST": read_barrier}),
    Route("api/cluster/nodes/{node}", {"DELETE": forget_node}),
    Route("api/cluster/tickets/{ticket}", {"GET": show_ticket}),
    Route("api/cluster/metadata", {"GET": show_metadata}),
    Route("api/cluster/metadata/{table}", {"GET": show_metadata}),
]
