"""`leveret ctl`: rabbitmqctl's commands, flags and output, driving a node through its HTTP API."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any, NoReturn
from urllib.parse import quote

from . import cluster_ctl, limits_ctl
from .ctl_client import (
    EX_DATAERR,
    EX_NOUSER,
    EX_OK,
    EX_SOFTWARE,
    EX_UNAVAILABLE,
    EX_USAGE,
    Client,
    CtlError,
)
from .listings import LISTINGS
from .output import print_done, print_message, print_rows

DEFAULT_URL = "http://guest:guest@127.0.0.1:15672"
# Seconds a command may take unless --timeout says otherwise; await_startup's is rabbitmqctl's.
DEFAULT_TIMEOUT = 60.0
COMMAND_TIMEOUTS = {"await_startup": 300.0, "await_online_nodes": 300.0}
# How often await_startup asks a node that is not up yet (rabbitmqctl checks every 0.5 s too).
STARTUP_POLL_SECONDS = 0.5


class _Parser(argparse.ArgumentParser):
    """Usage errors exit with 64, as rabbitmqctl's do."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EX_USAGE, f"Error: {message}\n")


def _vhost_path(vhost: str) -> str:
    return quote(vhost, safe="")


def _name(value: str) -> str:
    return quote(value, safe="")


def _no_vhost(vhost: str) -> CtlError:
    return CtlError(EX_DATAERR, f"Virtual host '{vhost}' does not exist")


def _no_user(user: str) -> CtlError:
    return CtlError(EX_NOUSER, f'User "{user}" does not exist')


# --- list commands ----------------------------------------------------------------------------


def _run_listing(client: Client, args: argparse.Namespace) -> int:
    listing = LISTINGS[args.ctl_command]
    columns = list(args.info_items) or list(listing.default_columns)
    unknown = [c for c in columns if c not in listing.info_items]
    if unknown:
        raise CtlError(EX_USAGE, f"Info key(s) {','.join(unknown)} are not supported")
    vhost = args.vhost
    items = client.call("GET", listing.path(vhost), missing=_no_vhost(vhost))
    rows = [{c: listing.info_items[c](item) for c in columns} for item in items]
    banner = (
        f"Listing {listing.noun} for vhost {vhost} ..."
        if listing.per_vhost
        else f"Listing {listing.noun} ..."
    )
    print_rows(args, columns, rows, banner)
    return EX_OK


# --- policies and parameters ------------------------------------------------------------------


def _definition(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        raise CtlError(EX_DATAERR, f"could not parse JSON document: {text}") from None


def _set_policy(kind_path: str, noun: str) -> Callable[[Client, argparse.Namespace], int]:
    def run(client: Client, args: argparse.Namespace) -> int:
        body = {
            "pattern": args.pattern,
            "definition": _definition(args.definition),
            "priority": args.priority,
            "apply-to": args.apply_to,
        }
        print_done(
            args,
            f'Setting {noun} "{args.name}" for pattern "{args.pattern}" to "{args.definition}" '
            f'with priority "{args.priority}" for vhost "{args.vhost}" ...',
        )
        client.call(
            "PUT",
            f"/api/{kind_path}/{_vhost_path(args.vhost)}/{_name(args.name)}",
            body,
            missing=_no_vhost(args.vhost),
        )
        return EX_OK

    return run


def _clear_policy(kind_path: str, noun: str) -> Callable[[Client, argparse.Namespace], int]:
    def run(client: Client, args: argparse.Namespace) -> int:
        print_done(args, f'Clearing {noun} "{args.name}" on vhost "{args.vhost}" ...')
        client.call(
            "DELETE",
            f"/api/{kind_path}/{_vhost_path(args.vhost)}/{_name(args.name)}",
            missing=CtlError(EX_DATAERR, "Parameter does not exist"),
        )
        return EX_OK

    return run


def _list_policies(kind_path: str, noun: str) -> Callable[[Client, argparse.Namespace], int]:
    def run(client: Client, args: argparse.Namespace) -> int:
        items = client.call(
            "GET", f"/api/{kind_path}/{_vhost_path(args.vhost)}", missing=_no_vhost(args.vhost)
        )
        columns = ["vhost", "name", "pattern", "apply-to", "definition", "priority"]
        print_rows(args, columns, items, f'Listing {noun} for vhost "{args.vhost}" ...')
        return EX_OK

    return run


def set_parameter(client: Client, args: argparse.Namespace) -> int:
    print_done(
        args,
        f'Setting runtime parameter "{args.name}" for component "{args.component}" '
        f'to "{args.value}" in vhost "{args.vhost}" ...',
    )
    path = f"/api/parameters/{_name(args.component)}/{_vhost_path(args.vhost)}/{_name(args.name)}"
    client.call("PUT", path, {"value": _definition(args.value)}, missing=_no_vhost(args.vhost))
    return EX_OK


def clear_parameter(client: Client, args: argparse.Namespace) -> int:
    print_done(
        args,
        f'Clearing runtime parameter "{args.name}" for component "{args.component}" '
        f'on vhost "{args.vhost}" ...',
    )
    path = f"/api/parameters/{_name(args.component)}/{_vhost_path(args.vhost)}/{_name(args.name)}"
    client.call("DELETE", path, missing=CtlError(EX_DATAERR, "Parameter does not exist"))
    return EX_OK


def list_parameters(client: Client, args: argparse.Namespace) -> int:
    items = client.call("GET", "/api/parameters", missing=_no_vhost(args.vhost))
    items = [p for p in items if p.get("vhost") == args.vhost]
    print_rows(
        args,
        ["component", "name", "value"],
        items,
        f'Listing runtime parameters for vhost "{args.vhost}" ...',
    )
    return EX_OK


# --- users, vhosts, permissions ---------------------------------------------------------------


def add_user(client: Client, args: argparse.Namespace) -> int:
    status, _ = client.request("GET", f"/api/users/{_name(args.username)}")
    if status == 200:
        raise CtlError(EX_SOFTWARE, f'User "{args.username}" already exists')
    print_done(args, f'Adding user "{args.username}" ...')
    client.call(
        "PUT", f"/api/users/{_name(args.username)}", {"password": args.password, "tags": ""}
    )
    return EX_OK


def delete_user(client: Client, args: argparse.Namespace) -> int:
    print_done(args, f'Deleting user "{args.username}" ...')
    client.call("DELETE", f"/api/users/{_name(args.username)}", missing=_no_user(args.username))
    return EX_OK


def _existing_user(client: Client, username: str) -> dict[str, Any]:
    user: dict[str, Any] = client.call(
        "GET", f"/api/users/{_name(username)}", missing=_no_user(username)
    )
    return user


def change_password(client: Client, args: argparse.Namespace) -> int:
    user = _existing_user(client, args.username)
    print_done(args, f'Changing password for user "{args.username}" ...')
    client.call(
        "PUT",
        f"/api/users/{_name(args.username)}",
        {"password": args.password, "tags": user["tags"]},
    )
    return EX_OK


def set_user_tags(client: Client, args: argparse.Namespace) -> int:
    user = _existing_user(client, args.username)
    print_done(args, f'Setting tags for user "{args.username}" to [{", ".join(args.tags)}] ...')
    body = {"password_hash": user["password_hash"], "tags": list(args.tags)}
    client.call("PUT", f"/api/users/{_name(args.username)}", body)
    return EX_OK


def list_users(client: Client, args: argparse.Namespace) -> int:
    items = [{"user": u["name"], "tags": u["tags"]} for u in client.call("GET", "/api/users")]
    if getattr(args, "formatter", "table") != "json":
        items = [{"user": i["user"], "tags": "[" + ", ".join(i["tags"]) + "]"} for i in items]
    print_rows(args, ["user", "tags"], items, "Listing users ...")
    return EX_OK


def add_vhost(client: Client, args: argparse.Namespace) -> int:
    print_done(args, f'Adding vhost "{args.vhost_name}" ...')
    body: dict[str, Any] = {}
    if args.description is not None:
        body["description"] = args.description
    if args.tags is not None:
        body["tags"] = args.tags
    if args.default_queue_type is not None:
        body["default_queue_type"] = args.default_queue_type
    client.call("PUT", f"/api/vhosts/{_vhost_path(args.vhost_name)}", body)
    return EX_OK


def delete_vhost(client: Client, args: argparse.Namespace) -> int:
    print_done(args, f'Deleting vhost "{args.vhost_name}" ...')
    client.call(
        "DELETE", f"/api/vhosts/{_vhost_path(args.vhost_name)}", missing=_no_vhost(args.vhost_name)
    )
    return EX_OK


def set_permissions(client: Client, args: argparse.Namespace) -> int:
    print_done(args, f'Setting permissions for user "{args.username}" in vhost "{args.vhost}" ...')
    status, payload = client.request(
        "PUT",
        f"/api/permissions/{_vhost_path(args.vhost)}/{_name(args.username)}",
        {"configure": args.conf, "write": args.write, "read": args.read},
    )
    if status >= 300:
        reason = payload.get("reason") if isinstance(payload, dict) else payload
        if reason == "vhost_or_user_not_found":
            status_user, _ = client.request("GET", f"/api/users/{_name(args.username)}")
            raise _no_user(args.username) if status_user == 404 else _no_vhost(args.vhost)
        raise CtlError(EX_UNAVAILABLE, f"{reason} (HTTP {status})")
    return EX_OK


def clear_permissions(client: Client, args: argparse.Namespace) -> int:
    print_done(args, f'Clearing permissions for user "{args.username}" in vhost "{args.vhost}" ...')
    client.call(
        "DELETE",
        f"/api/permissions/{_vhost_path(args.vhost)}/{_name(args.username)}",
        missing=CtlError(
            EX_DATAERR, f'No permissions for user "{args.username}" in vhost "{args.vhost}"'
        ),
    )
    return EX_OK


def list_permissions(client: Client, args: argparse.Namespace) -> int:
    items = client.call(
        "GET", f"/api/vhosts/{_vhost_path(args.vhost)}/permissions", missing=_no_vhost(args.vhost)
    )
    print_rows(
        args,
        ["user", "configure", "write", "read"],
        items,
        f'Listing permissions for vhost "{args.vhost}" ...',
    )
    return EX_OK


def list_user_permissions(client: Client, args: argparse.Namespace) -> int:
    items = client.call(
        "GET", f"/api/users/{_name(args.username)}/permissions", missing=_no_user(args.username)
    )
    print_rows(
        args,
        ["vhost", "configure", "write", "read"],
        items,
        f'Listing permissions for user "{args.username}" ...',
    )
    return EX_OK


# --- connections ------------------------------------------------------------------------------


def close_connection(client: Client, args: argparse.Namespace) -> int:
    print_done(args, f"Closing connection {args.connection}, reason: {args.explanation}...")
    client.call(
        "DELETE",
        f"/api/connections/{_name(args.connection)}",
        # Header values travel as bytes: UTF-8 keeps an explanation in any language intact.
        headers={"X-Reason": args.explanation.encode("utf-8")},
        missing=CtlError(
            EX_UNAVAILABLE,
            f'Connection "{args.connection}" does not exist (see list_connections)',
        ),
    )
    return EX_OK


# --- queues -----------------------------------------------------------------------------------


def _no_queue(args: argparse.Namespace) -> CtlError:
    return CtlError(EX_DATAERR, f"queue '{args.queue}' in vhost '{args.vhost}' does not exist")


def purge_queue(client: Client, args: argparse.Namespace) -> int:
    print_done(args, f"Purging queue '{args.queue}' in vhost '{args.vhost}' ...")
    client.call(
        "DELETE",
        f"/api/queues/{_vhost_path(args.vhost)}/{_name(args.queue)}/contents",
        missing=_no_queue(args),
    )
    return EX_OK


_FEDERATION_COLUMNS = [
    "id",
    "node",
    "vhost",
    "queue",
    "upstream_queue",
    "upstream",
    "type",
    "status",
    "demand",
    "uri",
    "error",
    "timestamp",
]


def federation_status(client: Client, args: argparse.Namespace) -> int:
    path = "/api/federation-links/state/down" if args.only_down else "/api/federation-links"
    links = client.call("GET", path)
    print_rows(args, _FEDERATION_COLUMNS, links, "Listing federation links ...")
    return EX_OK


def restart_federation_link(client: Client, args: argparse.Namespace) -> int:
    links = client.call("GET", "/api/federation-links")
    link = next((found for found in links if found["id"] == args.link_id), None)
    if link is None:
        raise CtlError(EX_DATAERR, f"Federation link with ID {args.link_id} not found")
    print_done(args, f"Restarting federation link in vhost {link['vhost']} with ID {link['id']}")
    client.call(
        "DELETE",
        f"/api/federation-links/vhost/{_vhost_path(link['vhost'])}/{_name(link['id'])}/"
        f"{_name(link['node'])}/restart",
    )
    return EX_OK


def delete_queue(client: Client, args: argparse.Namespace) -> int:
    path = f"/api/queues/{_vhost_path(args.vhost)}/{_name(args.queue)}"
    queue = client.call("GET", path, missing=_no_queue(args))
    conditions = []
    if args.if_empty:
        conditions.append("if-empty=true")
    if args.if_unused:
        conditions.append("if-unused=true")
    print_done(args, f"Deleting queue '{args.queue}' on vhost '{args.vhost}' ...")
    client.call(
        "DELETE", path + ("?" + "&".join(conditions) if conditions else ""), missing=_no_queue(args)
    )
    print_done(
        args, f"Queue was successfully deleted with {queue.get('messages', 0)} ready messages"
    )
    return EX_OK


# --- node -------------------------------------------------------------------------------------


def ping(client: Client, args: argparse.Namespace) -> int:
    print_done(
        args,
        f"Will ping the node at {client.address}. This only checks that it runs and answers "
        f"its HTTP API. Timeout: {int(args.timeout * 1000)} ms.",
    )
    try:
        status, _ = client.request("GET", "/api/whoami")
    except CtlError:
        status = 0
    if status != 200:
        raise CtlError(
            EX_UNAVAILABLE,
            f"Failed to connect and authenticate to {client.address} "
            f"in {int(args.timeout * 1000)} ms",
        )
    print_message(args, "Ping succeeded")
    return EX_OK


def await_startup(client: Client, args: argparse.Namespace) -> int:
    """Wait until the node answers its health check, as rabbitmqctl waits for the node to boot."""
    deadline = time.monotonic() + args.timeout
    while True:
        remaining = deadline - time.monotonic()
        try:
            status, payload = client.request(
                "GET", "/api/health/checks/virtual-hosts", timeout=max(remaining, 0.1)
            )
        except CtlError as refused:  # not listening yet, or still starting
            last = refused.message
        else:
            if status == 200:
                return EX_OK
            if status in (401, 403):
                raise CtlError(EX_UNAVAILABLE, "not authorised: check the user in --url")
            if status != 503:
                raise CtlError(EX_UNAVAILABLE, f"unexpected answer (HTTP {status}): {payload}")
            last = f"the health check failed: {payload}"
        if time.monotonic() + STARTUP_POLL_SECONDS > deadline:
            raise CtlError(
                EX_UNAVAILABLE,
                f"timeout: the node at {client.address} did not start within "
                f"{args.timeout:g} seconds ({last})",
            )
        time.sleep(STARTUP_POLL_SECONDS)


def status(client: Client, args: argparse.Namespace) -> int:
    overview = client.call("GET", "/api/overview")
    node_name = overview.get("node", "")
    node = client.call("GET", f"/api/nodes/{_name(node_name)}") if node_name else {}
    vhosts = client.call("GET", "/api/vhosts?columns=name")
    report = {
        "pid": node.get("os_pid"),
        "node": node_name,
        "product_name": overview.get("product_name"),
        "product_version": overview.get("product_version"),
        "rabbitmq_version": overview.get("rabbitmq_version"),
        "erlang_version": overview.get("erlang_version"),
        "uptime": int(node.get("uptime", 0)) // 1000,
        "processors": node.get("processors"),
        "data_directory": node.get("db_dir"),
        "config_files": node.get("config_files", []),
        "log_files": node.get("log_files", []),
        "active_plugins": node.get("enabled_plugins", []),
        "alarms": [
            name
            for name, flag in (("memory", "mem_alarm"), ("disk", "disk_free_alarm"))
            if node.get(flag)
        ],
        "memory": {
            "total": {"rss": node.get("mem_used")},
            "strategy": node.get("mem_calculation_strategy"),
        },
        "vm_memory_high_watermark_limit": node.get("mem_limit"),
        "vm_memory_calculation_strategy": node.get("mem_calculation_strategy"),
        "disk_free": node.get("disk_free"),
        "disk_free_limit": node.get("disk_free_limit"),
        "file_descriptors": {
            "total_limit": node.get("fd_total"),
            "total_used": node.get("fd_used"),
            "sockets_limit": node.get("sockets_total"),
            "sockets_used": node.get("sockets_used"),
        },
        "listeners": [
            {
                "node": listener["node"],
                "interface": listener["ip_address"],
                "port": listener["port"],
                "protocol": listener["protocol"],
            }
            for listener in overview.get("listeners", [])
        ],
        "totals": {
            "virtual_host_count": len(vhosts),
            "connection_count": overview.get("object_totals", {}).get("connections"),
            "queue_count": overview.get("object_totals", {}).get("queues"),
        },
    }
    if getattr(args, "formatter", "table") == "json":
        print(json.dumps(report))
        return EX_OK
    print_done(args, f"Status of node {node_name} ...")
    lines = [
        "Runtime",
        "",
        f"OS PID: {report['pid']}",
        f"Uptime (seconds): {report['uptime']}",
        f"{report['product_name']} version: {report['product_version']}",
        f"RabbitMQ API version: {report['rabbitmq_version']}",
        f"Runtime version: {report['erlang_version']}",
        "",
        "Alarms",
        "",
        *(report["alarms"] or ["(none)"]),
        "",
        "Memory",
        "",
        f"Total memory used: {report['memory']['total']['rss']} bytes",
        f"Memory high watermark: {report['vm_memory_high_watermark_limit']} bytes",
        "",
        "Free Disk Space",
        "",
        f"Low free disk space watermark: {report['disk_free_limit']} bytes",
        f"Free disk space: {report['disk_free']} bytes",
        "",
        "Listeners",
        "",
        *(
            f"Interface: {one['interface']}, port: {one['port']}, protocol: {one['protocol']}"
            for one in report["listeners"]
        ),
        "",
        "Totals",
        "",
        f"Connection count: {report['totals']['connection_count']}",
        f"Queue count: {report['totals']['queue_count']}",
        f"Virtual host count: {report['totals']['virtual_host_count']}",
    ]
    print("\n".join(lines))
    return EX_OK


def export_definitions(client: Client, args: argparse.Namespace) -> int:
    document = client.call("GET", "/api/definitions")
    text = json.dumps(document)
    if args.path == "-":
        print(text)
        return EX_OK
    print_done(args, f'Exporting definitions in JSON to a file at "{args.path}" ...')
    try:
        with open(args.path, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        raise CtlError(EX_DATAERR, f"could not write {args.path}: {exc}") from None
    return EX_OK


def import_definitions(client: Client, args: argparse.Namespace) -> int:
    try:
        if args.path == "-":
            text = sys.stdin.read()
        else:
            with open(args.path, encoding="utf-8") as handle:
                text = handle.read()
    except OSError as exc:
        raise CtlError(EX_DATAERR, f"could not read {args.path}: {exc}") from None
    document = _definition(text)
    print_done(args, f'Importing definitions in JSON from a file at "{args.path}" ...')
    client.call("POST", "/api/definitions", document)
    print_done(
        args,
        "Successfully started definition import. "
        "This process is asynchronous and can take some time.",
    )
    return EX_OK


# --- the parser -------------------------------------------------------------------------------

COMMANDS: dict[str, Callable[[Client, argparse.Namespace], int]] = {
    **{name: _run_listing for name in LISTINGS},
    "set_policy": _set_policy("policies", "policy"),
    "clear_policy": _clear_policy("policies", "policy"),
    "list_policies": _list_policies("policies", "policies"),
    "set_operator_policy": _set_policy("operator-policies", "operator policy"),
    "clear_operator_policy": _clear_policy("operator-policies", "operator policy"),
    "list_operator_policies": _list_policies("operator-policies", "operator policies"),
    "set_parameter": set_parameter,
    "clear_parameter": clear_parameter,
    "list_parameters": list_parameters,
    "add_user": add_user,
    "delete_user": delete_user,
    "change_password": change_password,
    "set_user_tags": set_user_tags,
    "list_users": list_users,
    "add_vhost": add_vhost,
    "delete_vhost": delete_vhost,
    "set_permissions": set_permissions,
    "clear_permissions": clear_permissions,
    "list_permissions": list_permissions,
    "list_user_permissions": list_user_permissions,
    "close_connection": close_connection,
    "ping": ping,
    "await_startup": await_startup,
    "purge_queue": purge_queue,
    "delete_queue": delete_queue,
    "status": status,
    "federation_status": federation_status,
    "restart_federation_link": restart_federation_link,
    "export_definitions": export_definitions,
    "import_definitions": import_definitions,
}


def _common_options(suppress: bool) -> argparse.ArgumentParser:
    """Options allowed before and after the command name (later ones win)."""
    default: Any = argparse.SUPPRESS if suppress else None
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "-p", "--vhost", default=default if suppress else "/", help="virtual host (default /)"
    )
    common.add_argument(
        "--formatter",
        choices=("table", "json", "pretty_table"),
        default=default if suppress else "table",
    )
    common.add_argument(
        "-q", "--quiet", action="store_true", default=default if suppress else False
    )
    common.add_argument(
        "-s", "--silent", action="store_true", default=default if suppress else False
    )
    common.add_argument(
        "--no-table-headers", action="store_true", default=default if suppress else False
    )
    common.add_argument(
        "-t",
        "--timeout",
        type=float,
        default=default,
        help=f"seconds (default {DEFAULT_TIMEOUT:g}; await_startup: 300)",
    )
    return common


def add_ctl_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add `ctl` and its commands to the `leveret` command's subparsers."""
    ctl = subparsers.add_parser(
        "ctl",
        help="manage a node through its HTTP API, with rabbitmqctl's commands",
        parents=[_common_options(suppress=False)],
    )
    _fill_ctl_parser(ctl)


def _fill_ctl_parser(ctl: argparse.ArgumentParser) -> None:
    ctl.add_argument(
        "--url",
        default=os.environ.get("LEVERET_CTL_URL", DEFAULT_URL),
        help=f"the node's management URL (default {DEFAULT_URL}, or $LEVERET_CTL_URL)",
    )
    ctl.add_argument(
        "--cacert",
        metavar="FILE",
        help="for an https:// URL: trust the server certificates this PEM CA file signed "
        "(default: the system's CAs)",
    )
    ctl.add_argument(
        "--insecure",
        action="store_true",
        help="for an https:// URL: do not check the server's certificate (tests only)",
    )
    commands: argparse._SubParsersAction[argparse.ArgumentParser] = ctl.add_subparsers(
        dest="ctl_command", required=True, metavar="COMMAND", parser_class=_Parser
    )
    common = _common_options(suppress=True)

    def command(name: str, text: str) -> argparse.ArgumentParser:
        return commands.add_parser(name, help=text, parents=[common])

    for name, listing in LISTINGS.items():
        parser = command(name, f"list {listing.noun}")
        parser.add_argument(
            "info_items",
            nargs="*",
            metavar="INFO_ITEM",
            help=f"columns: {', '.join(sorted(listing.info_items))}",
        )
    for prefix, noun in (("", "policy"), ("operator_", "operator policy")):
        parser = command(f"set_{prefix}policy", f"set a {noun}")
        parser.add_argument("name")
        parser.add_argument("pattern")
        parser.add_argument("definition", help="JSON object")
        parser.add_argument("--priority", type=int, default=0)
        parser.add_argument(
            "--apply-to", default="all", choices=("queues", "exchanges", "all", "classic_queues")
        )
        parser = command(f"clear_{prefix}policy", f"clear a {noun}")
        parser.add_argument("name")
        command(f"list_{prefix}policies", f"list {noun} settings")
    parser = command("set_parameter", "set a runtime parameter")
    parser.add_argument("component")
    parser.add_argument("name")
    parser.add_argument("value", help="JSON value")
    parser = command("clear_parameter", "clear a runtime parameter")
    parser.add_argument("component")
    parser.add_argument("name")
    command("list_parameters", "list runtime parameters of a vhost")
    parser = command("add_user", "create a user")
    parser.add_argument("username")
    parser.add_argument("password")
    parser = command("delete_user", "delete a user")
    parser.add_argument("username")
    parser = command("change_password", "change a user's password")
    parser.add_argument("username")
    parser.add_argument("password")
    parser = command("set_user_tags", "set a user's tags")
    parser.add_argument("username")
    parser.add_argument("tags", nargs="*")
    command("list_users", "list users")
    parser = command("add_vhost", "create a virtual host")
    parser.add_argument("vhost_name", metavar="vhost")
    parser.add_argument("--description")
    parser.add_argument("--tags")
    parser.add_argument("--default-queue-type")
    parser = command("delete_vhost", "delete a virtual host")
    parser.add_argument("vhost_name", metavar="vhost")
    parser = command("set_permissions", "set a user's permissions in a vhost")
    parser.add_argument("username")
    parser.add_argument("conf")
    parser.add_argument("write")
    parser.add_argument("read")
    parser = command("clear_permissions", "clear a user's permissions in a vhost")
    parser.add_argument("username")
    command("list_permissions", "list permissions in a vhost")
    parser = command("list_user_permissions", "list a user's permissions in every vhost")
    parser.add_argument("username")
    parser = command("close_connection", "close a client connection, with a reason it is told")
    parser.add_argument("connection", help="the connection's name, as list_connections shows")
    parser.add_argument("explanation")
    command("ping", "check that the node runs and answers")
    command("await_startup", "wait until the node has started (--timeout seconds, 300)")
    parser = command("purge_queue", "remove a queue's ready messages")
    parser.add_argument("queue")
    parser = command("delete_queue", "delete a queue")
    parser.add_argument("queue")
    parser.add_argument("-e", "--if-empty", action="store_true")
    parser.add_argument("-u", "--if-unused", action="store_true")
    command("status", "the node's status")
    parser = command("federation_status", "the federation links and their state")
    parser.add_argument("--only-down", action="store_true", help="only links that are not running")
    parser = command("restart_federation_link", "reconnect a federation link")
    parser.add_argument("link_id", help="the link's id, as federation_status shows")
    parser = command("export_definitions", "write definitions as JSON to a file, or - for stdout")
    parser.add_argument("path")
    parser = command("import_definitions", "read definitions as JSON from a file, or - for stdin")
    parser.add_argument("path")
    cluster_ctl.register(command, COMMANDS)
    limits_ctl.register(command, COMMANDS)


def run_ctl(args: argparse.Namespace) -> int:
    """Run a parsed `leveret ctl` command; returns rabbitmqctl's exit code."""
    if getattr(args, "timeout", None) is None:
        args.timeout = COMMAND_TIMEOUTS.get(args.ctl_command, DEFAULT_TIMEOUT)
    try:
        client = Client(args.url, timeout=args.timeout, cacert=args.cacert, insecure=args.insecure)
        return COMMANDS[args.ctl_command](client, args)
    except BrokenPipeError:
        # The reader of our output went away (`| head`): nothing more to say.
        return EX_OK
    except CtlError as error:
        if not getattr(args, "silent", False):
            print(f"Error:\n{error.message}", file=sys.stderr)
        return error.code


def main(argv: list[str] | None = None) -> int:
    parser: argparse.ArgumentParser = _Parser(
        prog="leveret ctl",
        parents=[_common_options(suppress=False)],
        description="manage a Leveret node through its HTTP API",
    )
    _fill_ctl_parser(parser)
    return run_ctl(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
