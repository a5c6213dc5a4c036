"""`leveret ctl` cluster commands: cluster_status, forget_cluster_node, await_online_nodes and
drain (for scripts and rolling restarts), and direct access to the replicated metadata
(submit_cluster_command, list_cluster_metadata) for tests and tools."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from .ctl_client import EX_DATAERR, EX_OK, EX_UNAVAILABLE, Client, CtlError
from .output import print_done

CommandFunction = Callable[[Client, argparse.Namespace], int]
# Exit code for a metadata command the store refused (an "error" reply).
EX_REFUSED = EX_DATAERR
_FIRST_POLL_SECONDS = 0.01
_MAX_POLL_SECONDS = 0.2
_AWAIT_POLL_SECONDS = 0.5
_HANDOVER_ALLOWANCE_SECONDS = 30.0


def wait_ticket(client: Client, ticket: dict[str, Any], timeout: float) -> Any:
    """Poll a ticket of the management API until its operation ends; its result, or CtlError."""
    deadline = time.monotonic() + timeout
    pause = _FIRST_POLL_SECONDS
    while True:
        outcome = client.call("GET", ticket["location"])
        if outcome["state"] == "done":
            return outcome.get("result")
        if outcome["state"] == "failed":
            raise CtlError(EX_UNAVAILABLE, outcome.get("reason") or outcome.get("error", "failed"))
        if time.monotonic() > deadline:
            raise CtlError(EX_UNAVAILABLE, f"no answer from the cluster within {timeout:.0f}s")
        time.sleep(pause)
        pause = min(pause * 2, _MAX_POLL_SECONDS)


def cluster_status(client: Client, args: argparse.Namespace) -> int:
    report = client.call("GET", "/api/cluster/status")
    if getattr(args, "formatter", "table") == "json":
        print(json.dumps(report))
        return EX_OK
    print_done(args, f"Cluster status of node {report.get('node', '')} ...")
    raft = report.get("raft") or {}
    alarms = [f"Node: {a['node']}, resource alarm: {a['resource']}" for a in report["alarms"]]
    partitions = [
        f"Node {node} cannot communicate with {', '.join(others)}"
        for node, others in report["partitions"].items()
    ]
    gossip = [
        f"{name}: {state['status']} (incarnation {state['incarnation']})"
        for name, state in (report.get("gossip") or {}).items()
    ]
    sections = [
        ("Basics", [f"Cluster name: {report['cluster_name']}"]),
        ("Disk Nodes", report["disk_nodes"]),
        ("Running Nodes", report["running_nodes"]),
        ("Alarms", alarms or ["(none)"]),
        ("Network Partitions", partitions or ["(none)"]),
        (
            "Raft",
            [
                f"Leader: {raft.get('leader') or '(none)'}",
                f"Term: {raft.get('term', 0)}",
                f"Commit index: {raft.get('commit_index', 0)}",
                f"This node: {raft.get('role', 'standalone')}",
            ],
        ),
        ("Gossip", gossip or ["(none)"]),
    ]
    print("\n\n".join(f"{title}\n\n" + "\n".join(lines) for title, lines in sections))
    return EX_OK


def forget_cluster_node(client: Client, args: argparse.Namespace) -> int:
    print_done(args, f"Removing node {args.node} from the cluster")
    ticket = client.call("DELETE", f"/api/cluster/nodes/{quote(args.node, safe='')}")
    wait_ticket(client, ticket, args.timeout)
    return EX_OK


def await_online_nodes(client: Client, args: argparse.Namespace) -> int:
    """Wait until `count` nodes of the cluster run, as rabbitmqctl await_online_nodes."""
    print_done(args, f"Will wait for at least {args.count} nodes to join the cluster")
    deadline = time.monotonic() + args.timeout
    running: list[str] = []
    while True:
        try:
            running = list(client.call("GET", "/api/cluster/status").get("running_nodes", []))
        except CtlError as refused:
            if time.monotonic() > deadline:
                raise refused
        if len(running) >= args.count:
            return EX_OK
        if time.monotonic() > deadline:
            raise CtlError(
                EX_UNAVAILABLE,
                f"timeout: {len(running)} of {args.count} nodes were online after "
                f"{args.timeout:g} seconds ({', '.join(running) or 'none'})",
            )
        time.sleep(_AWAIT_POLL_SECONDS)


def drain(client: Client, args: argparse.Namespace) -> int:
    """Hand this node's clients and Raft leadership to the others before it stops."""
    node = client.call("GET", "/api/overview").get("node", "")
    print_done(args, f"Will put node {node} into maintenance mode")
    report = client.call(
        "POST",
        f"/api/nodes/{quote(node, safe='')}/drain",
        {"timeout": args.timeout},
        # The node may first spend a few seconds handing Raft leadership over.
        timeout=args.timeout + _HANDOVER_ALLOWANCE_SECONDS,
    )
    print_done(
        args,
        f"Closed {report['closed_connections']} client connections "
        f"({report['unconfirmed_connections']} still waited for confirms)",
    )
    return EX_OK


def submit_cluster_command(client: Client, args: argparse.Namespace) -> int:
    try:
        command = json.loads(args.metadata_command)
    except ValueError as error:
        raise CtlError(EX_DATAERR, f"the command is not JSON: {error}") from None
    if not isinstance(command, dict):
        raise CtlError(
            EX_DATAERR, 'the command must be a JSON object such as {"op": "add_vhost", "name": "v"}'
        )
    ticket = client.call("POST", "/api/cluster/commands", command)
    reply = wait_ticket(client, ticket, args.timeout)
    print(json.dumps(reply))
    return EX_REFUSED if isinstance(reply, dict) and reply.get("status") == "error" else EX_OK


def list_cluster_metadata(client: Client, args: argparse.Namespace) -> int:
    if not args.local:
        # Read-your-writes: first catch up with everything committed before this call.
        wait_ticket(client, client.call("POST", "/api/cluster/barrier"), args.timeout)
    path = "/api/cluster/metadata" + (f"/{quote(args.table, safe='')}" if args.table else "")
    tables = client.call(
        "GET", path, missing=CtlError(EX_DATAERR, f"no metadata table {args.table!r}")
    )
    print(json.dumps(tables if not args.table else tables[args.table]))
    return EX_OK


COMMANDS: dict[str, CommandFunction] = {
    "cluster_status": cluster_status,
    "forget_cluster_node": forget_cluster_node,
    "await_online_nodes": await_online_nodes,
    "drain": drain,
    "submit_cluster_command": submit_cluster_command,
    "list_cluster_metadata": list_cluster_metadata,
}


def register(
    command: Callable[[str, str], argparse.ArgumentParser],
    commands: dict[str, CommandFunction],
) -> None:
    """Add the cluster commands to `leveret ctl` (`command(name, help)` makes a subparser)."""
    for name, function in COMMANDS.items():
        already_parsed = name in commands
        commands[name] = function
        if already_parsed:
            continue
        if name == "cluster_status":
            command(name, "the cluster's nodes, Raft leader and term, and gossip view")
        elif name == "forget_cluster_node":
            parser = command(name, "remove a node from the cluster; it stays out")
            parser.add_argument("node")
        elif name == "await_online_nodes":
            parser = command(name, "wait until COUNT nodes of the cluster run (--timeout, 300)")
            parser.add_argument("count", type=int)
        elif name == "drain":
            parser = command(
                name, "before a stop: hand clients and leadership over (--timeout, 60)"
            )
        elif name == "submit_cluster_command":
            parser = command(name, "apply a replicated metadata command (JSON) through the leader")
            # Not "command": the `leveret` parser keeps its own subcommand under that name.
            parser.add_argument(
                "metadata_command", metavar="COMMAND", help='e.g. {"op": "add_vhost", "name": "v"}'
            )
        else:
            parser = command(name, "print the replicated metadata (after a read barrier)")
            parser.add_argument("table", nargs="?", help="one table, e.g. vhosts or members")
            parser.add_argument("--local", action="store_true", help="skip the read barrier")
