"""`/api/health/checks/*` and `/api/aliveness-test/{vhost}`: answers for load balancers and
probes."""

from __future__ import annotations

from typing import Any

from ..amqp.properties import BasicProperties
from . import metadata_writes
from .access import require_vhost
from .cluster_link import cluster_control
from .context import Context, Reply, Route, ok
from .errors import ApiError, bad_request
from .message_view import message_from_json
from .node_view import LISTENER_PROTOCOLS

ALIVENESS_QUEUE = "aliveness-test"
_SINGLE_NODE = {"status": "ok", "reason": "single node cluster"}


def _failed(body: dict[str, Any]) -> Reply:
    return Reply(503, {"status": "failed", **body})


def _alarms(ctx: Context, reason: str, *, whole_cluster: bool) -> Reply:
    node = ctx.broker.config.node_name
    found = [{"node": node, "resource": alarm} for alarm in sorted(ctx.broker.alarms)]
    control = cluster_control(ctx.broker) if whole_cluster else None
    if control is not None:
        # The other running nodes' alarms, from their gossip reports (this node's own are
        # fresher in the broker than in its last report).
        found += [
            {"node": alarm["node"], "resource": alarm["resource"]}
            for alarm in control.status_report()["alarms"]
            if alarm["node"] != node
        ]
    if not found:
        return ok({"status": "ok"})
    return _failed({"reason": reason, "alarms": found})


def alarms(ctx: Context) -> Reply:
    return _alarms(ctx, "There are alarms in effect in the cluster", whole_cluster=True)


def local_alarms(ctx: Context) -> Reply:
    return _alarms(ctx, "There are alarms in effect on the node", whole_cluster=False)


def _ports(ctx: Context) -> list[int]:
    return sorted(set(ctx.state.listeners.values()), reverse=True)


def port_listener(ctx: Context) -> Reply:
    text = ctx.param("port")
    if not text.isdigit():
        raise bad_request(f"Invalid port: {text}")
    port = int(text)
    if port in ctx.state.listeners.values():
        return ok({"status": "ok", "port": port})
    return _failed({"reason": "No active listener", "missing": port, "ports": _ports(ctx)})


def protocol_listener(ctx: Context) -> Reply:
    wanted = ctx.param("protocol")
    protocols = [LISTENER_PROTOCOLS.get(name, name) for name in ctx.state.listeners]
    if wanted in protocols or (wanted in ("amqp091", "amqp0-9-1") and "amqp" in protocols):
        return ok({"status": "ok", "protocol": wanted})
    return _failed({"reason": "No active listener", "missing": wanted, "protocols": protocols})


def virtual_hosts(ctx: Context) -> Reply:
    # Every vhost of a running Leveret node is up: there is no per-vhost supervisor to fail.
    return ok({"status": "ok"})


def single_node_ok(ctx: Context) -> Reply:
    # Leveret has no quorum or mirrored queues whose loss this node could cause.
    return ok(dict(_SINGLE_NODE))


def certificate_expiration(ctx: Context) -> Reply:
    # No TLS listener, so no certificate can expire.
    return ok({"status": "ok"})


async def aliveness(ctx: Context) -> Reply:
    """Declare the aliveness-test queue, publish a message to it and fetch it back."""
    name = ctx.param("vhost")
    require_vhost(ctx.broker, ctx.caller, name)
    vhost = ctx.broker.vhosts[name]
    try:
        await metadata_writes.declare_queue(
            ctx, vhost, ALIVENESS_QUEUE, durable=False, auto_delete=False, arguments={}
        )
    except ApiError as error:
        return _failed({"reason": str(error.reason)})
    queue = vhost.queues.get(ALIVENESS_QUEUE)
    if queue is None:
        return _failed({"reason": "the aliveness test queue is homed on another node"})
    message = message_from_json("", ALIVENESS_QUEUE, BasicProperties(), "test_message", "string")
    queue.deliver(message)
    entry = queue.get(False)
    if entry is None:
        return _failed({"reason": "aliveness test message was not delivered"})
    queue.settle(entry)
    return ok({"status": "ok"})


ROUTES = [
    Route("api/health/checks/alarms", {"GET": alarms}),
    Route("api/health/checks/local-alarms", {"GET": local_alarms}),
    Route("api/health/checks/port-listener/{port}", {"GET": port_listener}),
    Route("api/health/checks/protocol-listener/{protocol}", {"GET": protocol_listener}),
    Route("api/health/checks/virtual-hosts", {"GET": virtual_hosts}),
    Route("api/health/checks/node-is-quorum-critical", {"GET": single_node_ok}),
    Route("api/health/checks/node-is-mirror-sync-critical", {"GET": single_node_ok}),
    Route(
        "api/health/checks/certificate-expiration/{within}/{unit}", {"GET": certificate_expiration}
    ),
    Route("api/aliveness-test/{vhost}", {"GET": aliveness}),
]
