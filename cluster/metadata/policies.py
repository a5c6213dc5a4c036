"""Commands on policies, operator policies and runtime parameters."""

from __future__ import annotations

import re

from cluster.metadata.replies import Handlers, Reply, reply
from cluster.metadata.tables import Tables
from proto.metadata_schema import (
    ClearGlobalParameter,
    ClearOperatorPolicy,
    ClearParameter,
    ClearPolicy,
    CommandError,
    Effect,
    GlobalParameterChanged,
    GlobalParameterRecord,
    OperatorPolicyChanged,
    ParameterChanged,
    ParameterRecord,
    PolicyChanged,
    PolicyRecord,
    SetGlobalParameter,
    SetOperatorPolicy,
    SetParameter,
    SetPolicy,
)

_APPLY_TO = ("queues", "exchanges", "all", "classic_queues", "quorum_queues", "streams")


def _set_policy(
    tables: Tables, command: SetPolicy | SetOperatorPolicy
) -> tuple[Reply, list[Effect]]:
    vhost, name = command.vhost, command.name
    if (vhost,) not in tables.vhosts:
        raise CommandError(f"no such vhost {vhost!r}")
    try:
        re.compile(command.pattern)
    except re.error as error:
        raise CommandError(f"invalid pattern {command.pattern!r}: {error}") from error
    if command.apply_to not in _APPLY_TO:
        raise CommandError(f"apply_to must be one of {', '.join(_APPLY_TO)}")
    record = PolicyRecord(
        vhost=vhost,
        name=name,
        pattern=command.pattern,
        apply_to=command.apply_to,
        definition=command.definition,
        priority=command.priority,
    )
    operator = isinstance(command, SetOperatorPolicy)
    rows = tables.operator_policies if operator else tables.policies
    status = "updated" if (vhost, name) in rows else "created"
    tables.put("operator_policies" if operator else "policies", record)
    return reply(status), [_changed(operator, vhost, name)]


def _clear_policy(
    tables: Tables, command: ClearPolicy | ClearOperatorPolicy
) -> tuple[Reply, list[Effect]]:
    vhost, name = command.vhost, command.name
    operator = isinstance(command, ClearOperatorPolicy)
    rows = tables.operator_policies if operator else tables.policies
    if rows.pop((vhost, name), None) is None:
        return reply("not_found"), []
    return reply("deleted"), [_changed(operator, vhost, name)]


def _changed(operator: bool, vhost: str, name: str) -> Effect:
    if operator:
        return OperatorPolicyChanged(vhost=vhost, name=name)
    return PolicyChanged(vhost=vhost, name=name)


def set_parameter(tables: Tables, command: SetParameter) -> tuple[Reply, list[Effect]]:
    """Create or replace a per-vhost runtime parameter (e.g. a federation upstream)."""
    component, vhost, name = command.component, command.vhost, command.name
    if (vhost,) not in tables.vhosts:
        raise CommandError(f"no such vhost {vhost!r}")
    status = "updated" if (component, vhost, name) in tables.parameters else "created"
    record = ParameterRecord(component=component, vhost=vhost, name=name, value=command.value)
    tables.put("parameters", record)
    return reply(status), [ParameterChanged(component=component, vhost=vhost, name=name)]


def clear_parameter(tables: Tables, command: ClearParameter) -> tuple[Reply, list[Effect]]:
    """Remove a per-vhost runtime parameter."""
    component, vhost, name = command.component, command.vhost, command.name
    if tables.parameters.pop((component, vhost, name), None) is None:
        return reply("not_found"), []
    return reply("deleted"), [ParameterChanged(component=component, vhost=vhost, name=name)]


def set_global_parameter(tables: Tables, command: SetGlobalParameter) -> tuple[Reply, list[Effect]]:
    """Create or replace a cluster-wide parameter (e.g. cluster_name)."""
    name = command.name
    status = "updated" if (name,) in tables.global_parameters else "created"
    tables.put("global_parameters", GlobalParameterRecord(name=name, value=command.value))
    return reply(status), [GlobalParameterChanged(name=name)]


def clear_global_parameter(
    tables: Tables, command: ClearGlobalParameter
) -> tuple[Reply, list[Effect]]:
    """Remove a cluster-wide parameter."""
    name = command.name
    if tables.global_parameters.pop((name,), None) is None:
        return reply("not_found"), []
    return reply("deleted"), [GlobalParameterChanged(name=name)]


HANDLERS: Handlers = {
    SetPolicy: _set_policy,
    ClearPolicy: _clear_policy,
    SetOperatorPolicy: _set_policy,
    ClearOperatorPolicy: _clear_policy,
    SetParameter: set_parameter,
    ClearParameter: clear_parameter,
    SetGlobalParameter: set_global_parameter,
    ClearGlobalParameter: clear_global_parameter,
}
