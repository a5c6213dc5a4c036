"""A queue's effective settings from its x-arguments, its policy and its operator policy.

Each key has one resolver, as RabbitMQ's `process_args_policy`: numeric limits take the minimum of
whatever sets them; for the others the client's argument wins over the policy. Operator policies
may only cap the numeric limits.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

Resolver = Callable[[Any, Any, Any], Any]


def _minimum(argument: Any, policy: Any, operator: Any) -> Any:
    present = [value for value in (argument, policy, operator) if value is not None]
    return min(present) if present else None


def _argument_wins(argument: Any, policy: Any, operator: Any) -> Any:
    return argument if argument is not None else policy


# setting name -> (x-argument, policy key, resolver)
RESOLUTION: dict[str, tuple[str, str, Resolver]] = {
    "max_length": ("x-max-length", "max-length", _minimum),
    "max_length_bytes": ("x-max-length-bytes", "max-length-bytes", _minimum),
    "message_ttl": ("x-message-ttl", "message-ttl", _minimum),
    "expires": ("x-expires", "expires", _minimum),
    "overflow": ("x-overflow", "overflow", _argument_wins),
    "dead_letter_exchange": ("x-dead-letter-exchange", "dead-letter-exchange", _argument_wins),
    "dead_letter_routing_key": (
        "x-dead-letter-routing-key",
        "dead-letter-routing-key",
        _argument_wins,
    ),
    "leader_locator": ("x-queue-leader-locator", "queue-leader-locator", _argument_wins),
}


@dataclass(frozen=True, slots=True)
class QueueSettings:
    max_length: int | None = None
    max_length_bytes: int | None = None
    message_ttl: int | None = None  # milliseconds
    expires: int | None = None  # milliseconds
    overflow: str = "drop-head"
    dead_letter_exchange: str | None = None
    dead_letter_routing_key: str | None = None
    leader_locator: str | None = None

    @property
    def has_limits(self) -> bool:
        return self.max_length is not None or self.max_length_bytes is not None


def _text(value: Any) -> Any:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def resolve(
    arguments: Mapping[str, Any],
    policy: Mapping[str, Any] | None = None,
    operator_policy: Mapping[str, Any] | None = None,
) -> QueueSettings:
    policy = policy or {}
    operator_policy = operator_policy or {}
    values: dict[str, Any] = {}
    for setting, (argument_key, policy_key, resolver) in RESOLUTION.items():
        value = resolver(
            _text(arguments.get(argument_key)),
            _text(policy.get(policy_key)),
            _text(operator_policy.get(policy_key)),
        )
        if value is not None:
            values[setting] = value
    return QueueSettings(**values)


def effective_definition(settings: QueueSettings) -> dict[str, Any]:
    """The settings under their policy keys, as management shows `effective_policy_definition`."""
    result: dict[str, Any] = {}
    for setting, (_, policy_key, _) in RESOLUTION.items():
        value = getattr(settings, setting)
        if value is not None and not (setting == "overflow" and value == "drop-head"):
            result[policy_key] = value
    return result
