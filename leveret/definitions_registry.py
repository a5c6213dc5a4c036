"""Policies, operator policies, runtime parameters and vhost metadata, kept in memory for now.

The management API stores and lists these through `DefinitionsRegistry`; what they do to queues
and exchanges is the core's business. The registry is deliberately small and free of HTTP so it
can move into the core (behind the metadata store) unchanged: callers see plain dataclasses and
subscribe to changes with `subscribe`.
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from .limits import (
    VHOST_LIMIT_NAMES,
    VHOST_LIMITS_COMPONENT,
    VHOST_LIMITS_NAME,
    LimitInvalid,
    checked_limits,
    erlang_term,
    vhost_limits_value,
)

PolicyKind = Literal["policy", "operator_policy"]
ChangeListener = Callable[[str, str], None]  # (what changed, vhost)

# What a policy applies to; classic_queues is accepted as RabbitMQ 3.12+ does.
APPLY_TO = ("queues", "exchanges", "all", "classic_queues")


@dataclass(frozen=True, slots=True)
class Policy:
    vhost: str
    name: str
    pattern: str
    definition: dict[str, Any]
    priority: int = 0
    apply_to: str = "all"

    def applies_to(self, kind: Literal["queue", "exchange"], name: str) -> bool:
        if kind == "queue" and self.apply_to == "exchanges":
            return False
        if kind == "exchange" and self.apply_to in ("queues", "classic_queues"):
            return False
        return re.search(self.pattern, name) is not None

    def as_json(self) -> dict[str, Any]:
        return {
            "vhost": self.vhost,
            "name": self.name,
            "pattern": self.pattern,
            "apply-to": self.apply_to,
            "definition": self.definition,
            "priority": self.priority,
        }


@dataclass(frozen=True, slots=True)
class Parameter:
    component: str
    vhost: str
    name: str
    value: Any

    def as_json(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "vhost": self.vhost,
            "component": self.component,
            "name": self.name,
        }


@dataclass(slots=True)
class VhostMetadata:
    description: str = ""
    tags: list[str] = field(default_factory=list)
    default_queue_type: str = "undefined"
    tracing: bool = False


# A parameter component's validator: None when the value is acceptable, else the reason.
ComponentValidator = Callable[[str, str, Any], str | None]


def _accept_any(vhost: str, name: str, value: Any) -> str | None:
    return None


def _vhost_limits(vhost: str, name: str, value: Any) -> str | None:
    if not isinstance(value, dict):
        return f"{erlang_term(value)} is not a valid limits definition"
    try:
        checked_limits(value, VHOST_LIMIT_NAMES, "limits")
    except LimitInvalid as invalid:
        return str(invalid)
    return None


class DefinitionsRegistry:
    """The node's policies, operator policies, parameters and vhost metadata."""

    def __init__(self) -> None:
        self._policies: dict[PolicyKind, dict[tuple[str, str], Policy]] = {
            "policy": {},
            "operator_policy": {},
        }
        self._parameters: dict[tuple[str, str, str], Parameter] = {}
        self.global_parameters: dict[str, Any] = {
            "internal_cluster_id": "leveret-cluster-id-"
            + base64.urlsafe_b64encode(os.urandom(16)).rstrip(b"=").decode("ascii")
        }
        self.vhost_metadata: dict[str, VhostMetadata] = {}
        self.user_limits: dict[str, dict[str, int]] = {}
        self.vhost_limits: dict[str, dict[str, int]] = {}
        self.topic_permissions: dict[tuple[str, str, str], tuple[str, str]] = {}
        # Federation registers "federation-upstream" and "federation-upstream-set" validators.
        self._components: dict[str, ComponentValidator] = {
            "federation-upstream": _accept_any,
            "federation-upstream-set": _accept_any,
            VHOST_LIMITS_COMPONENT: _vhost_limits,
        }
        self._listeners: list[ChangeListener] = []

    # --- change notification ----------------------------------------------------------------

    def subscribe(self, listener: ChangeListener) -> None:
        """Call `listener(what, vhost)` after every change; what is policy, operator_policy,
        parameter."""
        self._listeners.append(listener)

    def _changed(self, what: str, vhost: str) -> None:
        for listener in list(self._listeners):
            listener(what, vhost)

    # --- policies -----------------------------------------------------------------------------

    def policies(self, kind: PolicyKind, vhost: str | None = None) -> list[Policy]:
        found = self._policies[kind].values()
        return sorted(
            (p for p in found if vhost is None or p.vhost == vhost), key=lambda p: (p.vhost, p.name)
        )

    def policy(self, kind: PolicyKind, vhost: str, name: str) -> Policy | None:
        return self._policies[kind].get((vhost, name))

    def set_policy(self, kind: PolicyKind, policy: Policy) -> bool:
        """Store a policy; True if it is new."""
        table = self._policies[kind]
        created = (policy.vhost, policy.name) not in table
        table[(policy.vhost, policy.name)] = policy
        self._changed(kind, policy.vhost)
        return created

    def clear_policy(self, kind: PolicyKind, vhost: str, name: str) -> bool:
        removed = self._policies[kind].pop((vhost, name), None)
        if removed is not None:
            self._changed(kind, vhost)
        return removed is not None

    def effective_policy(
        self, kind: PolicyKind, vhost: str, object_kind: Literal["queue", "exchange"], name: str
    ) -> Policy | None:
        """The one policy of this kind that applies: the highest priority among the matching."""
        best: Policy | None = None
        for policy in self._policies[kind].values():
            if policy.vhost != vhost or not policy.applies_to(object_kind, name):
                continue
            if best is None or policy.priority > best.priority:
                best = policy
        return best

    # --- parameters ---------------------------------------------------------------------------

    def register_component(self, component: str, validator: ComponentValidator) -> None:
        self._components[component] = validator

    def knows_component(self, component: str) -> bool:
        return component in self._components

    def validate_parameter(self, component: str, vhost: str, name: str, value: Any) -> str | None:
        validator = self._components.get(component)
        if validator is None:
            return f"component {component} not found"
        return validator(vhost, name, value)

    def parameters(self, component: str | None = None, vhost: str | None = None) -> list[Parameter]:
        return sorted(
            (
                p
                for p in self._parameters.values()
                if (component is None or p.component == component)
                and (vhost is None or p.vhost == vhost)
            ),
            key=lambda p: (p.component, p.vhost, p.name),
        )

    def parameter(self, component: str, vhost: str, name: str) -> Parameter | None:
        return self._parameters.get((component, vhost, name))

    def set_parameter(self, parameter: Parameter) -> bool:
        key = (parameter.component, parameter.vhost, parameter.name)
        created = key not in self._parameters
        self._parameters[key] = parameter
        if key[0] == VHOST_LIMITS_COMPONENT and key[2] == VHOST_LIMITS_NAME:
            self.vhost_limits[parameter.vhost] = vhost_limits_value(parameter.value)
        self._changed("parameter", parameter.vhost)
        return created

    def clear_parameter(self, component: str, vhost: str, name: str) -> bool:
        removed = self._parameters.pop((component, vhost, name), None)
        if component == VHOST_LIMITS_COMPONENT and name == VHOST_LIMITS_NAME:
            self.vhost_limits.pop(vhost, None)
        if removed is not None:
            self._changed("parameter", vhost)
        return removed is not None

    # --- vhosts -------------------------------------------------------------------------------

    def metadata(self, vhost: str) -> VhostMetadata:
        found = self.vhost_metadata.get(vhost)
        if found is None:
            found = self.vhost_metadata[vhost] = VhostMetadata()
        return found

    def forget_vhost(self, vhost: str) -> None:
        """A vhost was deleted: drop everything scoped to it."""
        for table in self._policies.values():
            for policy_key in [k for k in table if k[0] == vhost]:
                del table[policy_key]
        for parameter_key in [k for k in self._parameters if k[1] == vhost]:
            del self._parameters[parameter_key]
        for topic_key in [k for k in self.topic_permissions if k[1] == vhost]:
            del self.topic_permissions[topic_key]
        self.vhost_metadata.pop(vhost, None)
        self.vhost_limits.pop(vhost, None)
        self._changed("vhost", vhost)

    def forget_user(self, user: str) -> None:
        self.user_limits.pop(user, None)
        for key in [key for key in self.topic_permissions if key[0] == user]:
            del self.topic_permissions[key]

    def all_policies(self) -> Iterator[tuple[PolicyKind, Policy]]:
        for kind, table in self._policies.items():
            for policy in table.values():
                yield kind, policy
