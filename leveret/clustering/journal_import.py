"""A node's first definitions, as one batch for the replicated store: defaults, or an old journal.

Every node keeps its definitions in the cluster's replicated store, a lone node in its own
one-voter one. A data directory written before that kept them in a journal (definitions.log);
the first start on it imports the journal, so upgrading keeps every durable definition.
"""

from __future__ import annotations

import base64
import os
from typing import Any

from ..auth import hash_password
from ..config import Config
from ..definitions_log import Record

Command = dict[str, Any]


def default_commands(config: Config) -> Command:
    """A new node's definitions: the default vhost and user (RabbitMQ's guest), and the
    identity the cluster keeps for as long as it lives."""
    cluster_id = base64.urlsafe_b64encode(os.urandom(16)).rstrip(b"=").decode("ascii")
    return _batch(
        [
            {"op": "add_vhost", "name": config.default_vhost},
            {
                "op": "put_user",
                "name": config.default_user,
                "password_hash": hash_password(config.default_pass),
                "tags": ["administrator"],
            },
            _permissions(config.default_user, config.default_vhost, ".*", ".*", ".*"),
            {
                "op": "set_global_parameter",
                "name": "internal_cluster_id",
                "value": f"leveret-cluster-id-{cluster_id}",
            },
        ]
    )


def journal_commands(records: list[Record], node_name: str) -> Command:
    """The definitions an old journal holds (see DefinitionsLog.load), in replayable order;
    its queues are homed on this node, whose disk holds their messages."""
    commands: list[Command] = []
    for record in records:
        commands.extend(_commands_of(record, node_name))
    return _batch(commands)


def _commands_of(record: Record, node_name: str) -> list[Command]:
    kind = record["kind"]
    if kind == "vhost":
        return [{"op": "add_vhost", "name": record["name"]}]
    if kind == "user":
        return [
            {
                "op": "put_user",
                "name": record["name"],
                "password_hash": record["password_hash"],
                "tags": list(record["tags"]),
            }
        ]
    if kind == "permission":
        return [
            _permissions(
                record["user"],
                record["vhost"],
                record["configure"],
                record["write"],
                record["read"],
            )
        ]
    if kind == "exchange":
        return [
            {
                "op": "declare_exchange",
                "vhost": record["vhost"],
                "name": record["name"],
                "type": record["type"],
                "durable": True,
                "auto_delete": record["auto_delete"],
                "internal": record["internal"],
                "arguments": record["arguments"],
                "argument_types": dict(record["argument_types"]),
            }
        ]
    if kind == "queue":
        return [
            {
                "op": "declare_queue",
                "vhost": record["vhost"],
                "name": record["name"],
                "durable": True,
                "auto_delete": record["auto_delete"],
                "exclusive_owner": None,
                "arguments": record["arguments"],
                "argument_types": dict(record["argument_types"]),
                "home_node": node_name,
                "home_run": "",
            }
        ]
    if kind == "binding":
        return [
            {
                "op": "bind",
                "vhost": record["vhost"],
                "source": record["source"],
                "destination_type": record["destination_kind"],
                "destination": record["destination"],
                "routing_key": record["routing_key"],
                "arguments": record["arguments"],
            }
        ]
    if kind == "registry":
        return [_policy_command(entry) for entry in record["policies"]] + [
            {"op": "set_parameter", **entry} for entry in record["parameters"]
        ]
    raise ValueError(f"unknown definition kind {kind!r}")


def _policy_command(entry: Record) -> Command:
    return {
        "op": "set_policy" if entry["policy_kind"] == "policy" else "set_operator_policy",
        "vhost": entry["vhost"],
        "name": entry["name"],
        "pattern": entry["pattern"],
        "apply_to": entry["apply-to"],
        "definition": entry["definition"],
        "priority": entry["priority"],
    }


def _permissions(user: str, vhost: str, configure: str, write: str, read: str) -> Command:
    return {
        "op": "set_permissions",
        "user": user,
        "vhost": vhost,
        "configure": configure,
        "write": write,
        "read": read,
    }


def _batch(commands: list[Command]) -> Command:
    return {"op": "batch", "commands": commands}
