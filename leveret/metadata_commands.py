"""Definitions as commands and records of the metadata store, and back again.

Field-table arguments travel as tagged JSON (`encode_arguments`) with their AMQP type letters
beside them, so that a node that did not see the declaration compares redeclarations exactly as
the declaring node would.
"""

from __future__ import annotations

from typing import Any

from . import declare_rules as rules
from .definitions_log import decode_arguments, encode_arguments
from .exchanges.base import Binding
from .metadata import Command
from .names import RUN_ID

Record = dict[str, Any]


def declare_exchange(vhost: str, name: str, decl: rules.ExchangeDecl) -> Command:
    return {
        "op": "declare_exchange",
        "vhost": vhost,
        "name": name,
        "type": decl.type,
        "durable": decl.durable,
        "auto_delete": decl.auto_delete,
        "internal": decl.internal,
        "arguments": encode_arguments(dict(decl.arguments)),
        "argument_types": dict(decl.argument_types or {}),
    }


def delete_exchange(vhost: str, name: str, if_unused: bool) -> Command:
    return {"op": "delete_exchange", "vhost": vhost, "name": name, "if_unused": if_unused}


def exchange_decl(record: Record) -> rules.ExchangeDecl:
    """The declaration an exchange record holds."""
    return rules.ExchangeDecl(
        record["type"],
        record["durable"],
        record["auto_delete"],
        record["internal"],
        decode_arguments(record["arguments"]),
        dict(record.get("argument_types") or {}),
    )


def declare_queue(
    vhost: str,
    name: str,
    decl: rules.QueueDecl,
    owner: str | None,
    home_node: str,
    home_run: str = RUN_ID,
) -> Command:
    return {
        "op": "declare_queue",
        "vhost": vhost,
        "name": name,
        "durable": decl.durable,
        "auto_delete": decl.auto_delete,
        "exclusive_owner": owner,
        "arguments": encode_arguments(dict(decl.arguments)),
        "argument_types": dict(decl.argument_types or {}),
        "home_node": home_node,
        # Which run of the home node declared it: a non-durable queue ends with that run.
        "home_run": home_run,
    }


def delete_queue(vhost: str, name: str, owner: str | None) -> Command:
    command: Command = {"op": "delete_queue", "vhost": vhost, "name": name}
    if owner is not None:
        command["owner"] = owner
    return command


def queue_decl(record: Record) -> rules.QueueDecl:
    """The declaration a queue record holds."""
    return rules.QueueDecl(
        record["durable"],
        record["exclusive_owner"] is not None,
        record["auto_delete"],
        decode_arguments(record["arguments"]),
        dict(record.get("argument_types") or {}),
    )


def binding_command(op: str, vhost: str, binding: Binding) -> Command:
    """A "bind" or "unbind" command for `binding`."""
    return {
        "op": op,
        "vhost": vhost,
        "source": binding.source,
        "destination_type": binding.destination_kind,
        "destination": binding.destination,
        "routing_key": binding.routing_key,
        "arguments": encode_arguments(binding.argument_table()),
    }


def binding_of(record: Record) -> Binding:
    """The binding a binding record (or a binding effect) describes."""
    return Binding.of(
        record["source"],
        record["destination"],
        record["destination_type"],
        record["routing_key"],
        decode_arguments(record["arguments"]),
    )
