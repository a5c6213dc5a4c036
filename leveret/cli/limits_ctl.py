"""`leveret ctl` commands for vhost and user limits, as rabbitmqctl's."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from ..limits import USER_LIMIT_NAMES
from .ctl_client import EX_DATAERR, EX_NOUSER, EX_OK, Client, CtlError
from .output import print_done, print_rows

CommandFunction = Callable[[Client, argparse.Namespace], int]


def _segment(text: str) -> str:
    return quote(text, safe="")


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        raise CtlError(EX_DATAERR, f"could not parse JSON document: {text}") from None
    if not isinstance(value, dict):
        raise CtlError(EX_DATAERR, f"limits must be a JSON object: {text}")
    return value


def _no_vhost(vhost: str) -> CtlError:
    return CtlError(EX_DATAERR, f"Virtual host '{vhost}' does not exist")


def _no_user(user: str) -> CtlError:
    return CtlError(EX_NOUSER, f'User "{user}" does not exist')


def set_vhost_limits(client: Client, args: argparse.Namespace) -> int:
    """Replace the vhost's limits with the given ones (rabbitmqctl's set_vhost_limits)."""
    limits = _json_object(args.definition)
    print_done(args, f'Applying limits to vhost "{args.vhost}" (limits: {args.definition}) ...')
    path = f"/api/parameters/vhost-limits/{_segment(args.vhost)}/limits"
    client.call("PUT", path, {"value": limits}, missing=_no_vhost(args.vhost))
    return EX_OK


def clear_vhost_limits(client: Client, args: argparse.Namespace) -> int:
    print_done(args, f'Clearing vhost "{args.vhost}" limits ...')
    path = f"/api/parameters/vhost-limits/{_segment(args.vhost)}/limits"
    status, _ = client.request("DELETE", path)
    if status == 404 and args.vhost not in _vhost_names(client):
        raise _no_vhost(args.vhost)
    return EX_OK


def _vhost_names(client: Client) -> set[str]:
    return {item["name"] for item in client.call("GET", "/api/vhosts")}


def list_vhost_limits(client: Client, args: argparse.Namespace) -> int:
    if args.global_:
        items = client.call("GET", "/api/vhost-limits")
        banner = "Listing limits for all vhosts ..."
    else:
        path = f"/api/vhost-limits/{_segment(args.vhost)}"
        items = client.call("GET", path, missing=_no_vhost(args.vhost))
        banner = f'Listing limits for vhost "{args.vhost}" ...'
    rows = [{"vhost": item["vhost"], "limits": json.dumps(item["value"] or {})} for item in items]
    print_rows(args, ["vhost", "limits"] if args.global_ else ["limits"], rows, banner)
    return EX_OK


def set_user_limits(client: Client, args: argparse.Namespace) -> int:
    """Set the given limits of a user, keeping the others (rabbitmqctl's set_user_limits)."""
    limits = _json_object(args.definition)
    print_done(args, f'Setting user limits to "{args.definition}" for user "{args.username}" ...')
    for name, value in limits.items():
        path = f"/api/user-limits/{_segment(args.username)}/{_segment(name)}"
        status, payload = client.request("PUT", path, {"value": value})
        if status == 400 and isinstance(payload, dict) and isinstance(payload.get("reason"), list):
            raise _no_user(args.username)
        if status >= 300:
            reason = payload.get("reason", "") if isinstance(payload, dict) else payload
            raise CtlError(EX_DATAERR, str(reason))
    return EX_OK


def clear_user_limits(client: Client, args: argparse.Namespace) -> int:
    names = USER_LIMIT_NAMES if args.limit == "all" else (args.limit,)
    if args.limit == "all":
        print_done(args, f'Clearing all limits for user "{args.username}" ...')
    else:
        print_done(args, f'Clearing "{args.limit}" limit for user "{args.username}" ...')
    for name in names:
        path = f"/api/user-limits/{_segment(args.username)}/{_segment(name)}"
        client.call("DELETE", path, missing=_no_user(args.username))
    return EX_OK


def list_user_limits(client: Client, args: argparse.Namespace) -> int:
    if args.username is None:
        items = client.call("GET", "/api/user-limits")
        banner = "Listing limits for all users ..."
    else:
        path = f"/api/user-limits/{_segment(args.username)}"
        items = client.call("GET", path, missing=_no_user(args.username))
        banner = f'Listing limits for user "{args.username}" ...'
    rows = [{"user": item["user"], "limits": json.dumps(item["value"])} for item in items]
    print_rows(args, ["user", "limits"], rows, banner)
    return EX_OK


COMMANDS: dict[str, CommandFunction] = {
    "set_vhost_limits": set_vhost_limits,
    "clear_vhost_limits": clear_vhost_limits,
    "list_vhost_limits": list_vhost_limits,
    "set_user_limits": set_user_limits,
    "clear_user_limits": clear_user_limits,
    "list_user_limits": list_user_limits,
}


def register(
    command: Callable[[str, str], argparse.ArgumentParser],
    commands: dict[str, CommandFunction],
) -> None:
    """Add the limit commands to `leveret ctl` (`command(name, help)` makes a subparser)."""
    commands.update(COMMANDS)
    parser = command("set_vhost_limits", "set a vhost's limits (max-connections, max-queues)")
    parser.add_argument("definition", help='JSON, e.g. {"max-connections": 10}')
    command("clear_vhost_limits", "clear every limit of a vhost")
    parser = command("list_vhost_limits", "list a vhost's limits")
    parser.add_argument("--global", dest="global_", action="store_true", help="every vhost")
    parser = command("set_user_limits", "set a user's limits (max-connections, max-channels)")
    parser.add_argument("username")
    parser.add_argument("definition", help='JSON, e.g. {"max-channels": 100}')
    parser = command("clear_user_limits", "clear a user's limit, or all of them")
    parser.add_argument("username")
    parser.add_argument("limit", help="max-connections, max-channels or all")
    parser = command("list_user_limits", "list user limits (every user's by default)")
    parser.add_argument("--user", dest="username", default=None)
