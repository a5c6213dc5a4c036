"""Probes for orchestrators (`/health/startup`, `/health/ready`, `/health/live`, no credentials)
and the drain a rolling restart runs before it stops a node (`POST /api/nodes/{node}/drain`).

Ready means this node can serve clients: it has started (its listeners are up and it is in its
cluster), it is not draining, and it reaches a majority of the cluster's voters (a node cut off
in a minority cannot change definitions). Live means only that the node answers: a partitioned
node must not be restarted for it, since a restart does not heal a partition.
"""

from __future__ import annotations

from .access import require_admin
from .cluster_link import cluster_control
from .context import Context, Reply, Route, not_found_unless, ok
from .errors import bad_request

# The longest drain a caller may ask for, and the default (a preStop hook has its own limit).
_MAX_DRAIN_SECONDS = 3600.0
_DEFAULT_DRAIN_SECONDS = 60.0


def _answer(problem: str | None) -> Reply:
    if problem is None:
        return ok({"status": "ok"})
    return Reply(503, {"status": "failed", "reason": problem})


def _start_problem(ctx: Context) -> str | None:
    node = ctx.state.node
    if node is not None and not node.started:
        return "the node is starting"
    return None


def startup(ctx: Context) -> Reply:
    return _answer(_start_problem(ctx))


def ready(ctx: Context) -> Reply:
    problem = _start_problem(ctx)
    if problem is None and ctx.state.node is not None and ctx.state.node.draining:
        problem = "the node is draining"
    control = cluster_control(ctx.broker)
    if problem is None and control is not None:
        problem = control.majority_text()
    return _answer(problem)


def live(ctx: Context) -> Reply:
    return ok({"status": "ok"})


async def drain(ctx: Context) -> Reply:
    require_admin(ctx.caller)
    node = ctx.state.node
    not_found_unless(node is not None and ctx.param("node") == ctx.broker.config.node_name)
    assert node is not None
    timeout = ctx.json_body().get("timeout", _DEFAULT_DRAIN_SECONDS)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout < 0:
        raise bad_request("timeout must be a number of seconds")
    report = await node.drain(min(float(timeout), _MAX_DRAIN_SECONDS))
    return ok(
        {
            "node": ctx.broker.config.node_name,
            "closed_connections": report.closed_connections,
            "unconfirmed_connections": report.unconfirmed_connections,
        }
    )


ROUTES = [
    Route("health/startup", {"GET": startup}, public=True),
    Route("health/ready", {"GET": ready}, public=True),
    Route("health/live", {"GET": live}, public=True),
    Route("api/nodes/{node}/drain", {"POST": drain}),
]
