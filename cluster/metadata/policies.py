"""Commands on policies, operator policies and runtime parameters."""

from __future__ import annotations

import re

from cluster.metadata.commands import Command, CommandError, Effect, Reply, field, reply
from cluster.metadata.tables import Tables

_APPLY_TO = ("queues", "exchanges", "all", "classic_queues", "quorum_queues", "streams")


_EFFECTS = {"policies": "policy_changed", "operator_policies": "operator_policy_changed"}


def _set_policy(table: str, tables: Tables, command: Command) -> tuple[Reply, list[Effect]]:
    vhost, name = field(command, "vhost", str), field(command, "name", str)
    if (vhost,) not in tables.vhosts:
        raise CommandError(f"no such vhost {vhost!r}")
    pattern = field(command, "pattern", str)
    try:
        re.compile(pattern)
    except re.error as error:
        raise CommandError(f"invalid pattern {pattern!r}: {error}") from error
    apply_to = field(command, "apply_to", str, "all")
    if apply_to not in _APPLY_TO:
        raise CommandError(f"apply_to must be one of {', '.join(_APPLY_TO)}")
    priority = field(command, "priority", int, 0)
    record = {
        "vhost": vhost,
        "name": name,
        "pattern": pattern,
        "apply_to": apply_to,
        "definition": field(command, "definition", dict),
        "priority": priority,
    }
    rows = getattr(tables, table)
    status = "updated" if (vhost, name) in rows else "created"
    tables.put(table, record)
    return reply(status), [{"type": _EFFECTS[table], "vhost": vhost, "name": name}]


def _clear_policy(table: str, tables: Tables, command: Command) -> tuple[Reply, list[Effect]]:
    vhost, name = field(command, "vhost", str), field(command, "name", str)
    if getattr(tables, table).pop((vhost, name), None) is None:
        return reply("not_found"), []
    return reply("deleted"), [{"type": _EFFECTS[table], "vhost": vhost, "name": name}]


def set_policy(tables: Tables, command: Command) -> tuple[Reply, list[Effect]]:
    """Create or replace a user policy."""
    return _set_policy("policies", tables, command)


def clear_policy(tables: Tables, command: Command) -> tuple[Reply, list[Effect]]:
    """Remove a user policy."""
    return _clear_policy("policies", tables, command)


def set_operator_policy(tables: Tables, command: Command) -> tuple[Reply, list[Effect]]:
    """Create or replace an operator policy (which keys it may set is checked before proposing)."""
    return _set_policy("operator_policies", tables, command)


def clear_operator_policy(tables: Tables, command: Command) -> tuple[Reply, list[Effect]]:
    """Remove an operator policy."""
    return _clear_policy("operator_policies", tables, command)


def set_parameter(tables: Tables, command: Command) -> tuple[Reply, list[Effect]]:
    """Create or replace a per-vhost runtime parameter (e.g. a federation upstream)."""
    component, vhost = field(command, "component", str), field(command, "vhost", str)
    name = field(command, "name", str)
    if (vhost,) not in tables.vhosts:
        raise CommandError(f"no such vhost {vhost!r}")
    status = "updated" if (component, vhost, name) in tables.parameters else "created"
    record = {"component": component, "vhost": vhost, "name": name, "value": command.get("value")}
    tables.put("parameters", record)
    effect = {"type": "parameter_changed", "component": component, "vhost": vhost, "name": name}
    return reply(status), [effect]


def clear_parameter(tables: Tables, command: Command) -> tuple[Reply, list[Effect]]:
    """Remove a per-vhost runtime parameter."""
    component, vhost = field(command, "component", str), field(command, "vhost", str)
    name = field(command, "name", str)
    if tables.parameters.pop((component, vhost, name), None) is None:
        return reply("not_found"), []
    effect = {"type": "parameter_changed", "component": component, "vhost": vhost, "name": name}
    return reply("deleted"), [effect]


def set_global_parameter(tables: Tables, command: Command) -> tuple[Reply, list[Effect]]:
    """Create or replace a cluster-wide parameter (e.g. cluster_name)."""
    name = field(command, "name", str)
    status = "updated" if (name,) in tables.global_parameters else "created"
    tables.put("global_parameters", {"name": name, "value": command.get("value")})
    return reply(status), [{"type": "global_parameter_changed", "name": name}]


def clear_global_parameter(tables: Tables, command: Command) -> tuple[Reply, list[Effect]]:
    """Remove a cluster-wide parameter."""
    name = field(command, "name", str)
    if tables.global_parameters.pop((name,), None) is None:
        return reply("not_found"), []
    return reply("deleted"), [{"type": "global_parameter_changed", "name": name}]


HANDLERS = {
    "set_policy": set_policy,
    "clear_policy": clear_policy,
    "set_operator_policy": set_operator_policy,
    "clear_operator_policy": clear_operator_policy,
    "set_parameter": set_parameter,
    "clear_parameter": clear_parameter,
    "set_global_parameter": set_global_parameter,
    "clear_global_parameter": clear_global_parameter,
}
