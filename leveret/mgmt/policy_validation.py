"""Validation of policy and operator policy documents, with RabbitMQ's texts for each refusal.

One table per kind of policy: each known key has a check returning None or the reason the value
is refused. Unknown keys are refused together, as RabbitMQ lists them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ..declare_rules import erlang_term
from ..definitions_registry import APPLY_TO, Policy, PolicyKind
from ..stream_limits import MAX_STREAM_SEGMENT_SIZE, max_age_error
from .errors import key_missing_reason

Check = Callable[[Any], str | None]


def _is_integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _non_negative(what: str) -> Check:
    def check(value: Any) -> str | None:
        return (
            None
            if _is_integer(value) and value >= 0
            else f"{erlang_term(value)} is not a valid {what}"
        )

    return check


def _positive(what: str) -> Check:
    def check(value: Any) -> str | None:
        return (
            None
            if _is_integer(value) and value >= 1
            else f"{erlang_term(value)} is not a valid {what}"
        )

    return check


def _text(what: str) -> Check:
    def check(value: Any) -> str | None:
        return None if isinstance(value, str) else f"{erlang_term(value)} is not a valid {what}"

    return check


def _one_of(choices: tuple[Any, ...], what: str) -> Check:
    def check(value: Any) -> str | None:
        return (
            None
            if value in choices and not isinstance(value, bool)
            else f"{erlang_term(value)} {what}"
        )

    return check


def _text_or_texts(value: Any) -> str | None:
    """Federation's upstream and upstream-set names (checked further by federation)."""
    if isinstance(value, str) or (
        isinstance(value, list) and all(isinstance(v, str) for v in value)
    ):
        return None
    return f"{erlang_term(value)} is not a valid federation upstream"


def _max_age(value: Any) -> str | None:
    """Stream retention by age: RabbitMQ's "7D", "12h", ... (see queues/stream_offsets.py)."""
    if isinstance(value, str) and max_age_error(value, "longstr") is None:
        return None
    return f"{erlang_term(value)} is not a valid max age"


def _segment_size(value: Any) -> str | None:
    if _is_integer(value) and 0 <= value <= MAX_STREAM_SEGMENT_SIZE:
        return None
    return f"{erlang_term(value)} is not a valid segment size"


def _cluster_size(value: Any) -> str | None:
    if _is_integer(value) and value >= 0:
        return None
    return f"{erlang_term(value)} is not a valid cluster size"


POLICY_KEYS: dict[str, Check] = {
    "max-length": _non_negative("maximum length"),
    "max-length-bytes": _non_negative("maximum length in bytes"),
    "message-ttl": _non_negative("message TTL"),
    "expires": _positive("queue expiry"),
    "overflow": _one_of(
        ("drop-head", "reject-publish", "reject-publish-dlx"), "is not a valid overflow value"
    ),
    "dead-letter-exchange": _text("dead letter exchange name"),
    "dead-letter-routing-key": _text("dead letter routing key"),
    "dead-letter-strategy": _one_of(
        ("at-most-once", "at-least-once"), "is not a valid dead letter strategy"
    ),
    "alternate-exchange": _text("alternate exchange name"),
    "queue-leader-locator": _one_of(
        ("client-local", "balanced"), "is not a valid queue leader locator value"
    ),
    "queue-master-locator": _one_of(
        ("min-masters", "client-local", "random"), "invalid queue-master-locator value"
    ),
    "queue-mode": _one_of(("default", "lazy"), "is not a valid queue-mode value"),
    "queue-version": _one_of((1, 2), "is not a valid queue-version value"),
    "delivery-limit": _non_negative("delivery limit"),
    "max-in-memory-length": _non_negative("maximum memory in bytes"),
    "max-in-memory-bytes": _non_negative("maximum memory in bytes"),
    "consumer-timeout": _non_negative("consumer timeout"),
    "max-age": _max_age,
    "stream-max-segment-size-bytes": _segment_size,
    "initial-cluster-size": _cluster_size,
    "federation-upstream": _text_or_texts,
    "federation-upstream-set": _text("federation upstream set"),
}

# Operator policies cap what clients and users may set, so only limits are allowed in them.
OPERATOR_POLICY_KEYS: dict[str, Check] = {
    key: POLICY_KEYS[key]
    for key in (
        "expires",
        "message-ttl",
        "max-length",
        "max-length-bytes",
        "delivery-limit",
        "max-in-memory-length",
        "max-in-memory-bytes",
    )
}

_VALIDATION_FAILED = "Validation failed\n\n{}\n"


class PolicyInvalid(Exception):
    """The reason text is RabbitMQ's, ready for a 400 answer."""


def parse_policy(kind: PolicyKind, vhost: str, name: str, document: dict[str, Any]) -> Policy:
    """A Policy from a PUT body, or PolicyInvalid with RabbitMQ's reason."""
    missing = [key for key in ("pattern", "definition") if key not in document]
    if missing:
        raise PolicyInvalid(key_missing_reason(missing))
    pattern = document["pattern"]
    definition = document["definition"]
    apply_to = document.get("apply-to", "all")
    priority = document.get("priority", 0)
    _check(_pattern_problem(pattern))
    if apply_to not in APPLY_TO:
        _check(f"apply-to '{apply_to}' unrecognised; should be 'queues', 'exchanges' or 'all'")
    if isinstance(priority, str) and priority.lstrip("-").isdigit():
        priority = int(priority)  # rabbitmqctl and older tools send it as text
    if isinstance(priority, bool) or not isinstance(priority, (int, float)):
        _check(f"priority should be a number, actually was {erlang_term(priority)}")
    if not isinstance(definition, dict):
        _check(f"definition should be a JSON object, actually was {erlang_term(definition)}")
    _check(definition_problem(kind, definition))
    return Policy(vhost, name, pattern, dict(definition), int(priority), apply_to)


def definition_problem(kind: PolicyKind, definition: dict[str, Any]) -> str | None:
    if not definition:
        return "no policy provided"
    keys = POLICY_KEYS if kind == "policy" else OPERATOR_POLICY_KEYS
    unknown = sorted((key, value) for key, value in definition.items() if key not in keys)
    if unknown:
        listed = ",".join(
            "{" + erlang_term(key) + "," + erlang_term(value) + "}" for key, value in unknown
        )
        return f"[{listed}] are not recognised policy settings"
    for key, value in definition.items():
        problem = keys[key](value)
        if problem is not None:
            return problem
    if "federation-upstream" in definition and "federation-upstream-set" in definition:
        return (
            "cannot specify federation-upstream, federation-upstream-set or "
            "federation-upstream-pattern together"
        )
    return None


def _pattern_problem(pattern: Any) -> str | None:
    if not isinstance(pattern, str):
        return f"pattern should be a binary but was {erlang_term(pattern)}"
    try:
        re.compile(pattern)
    except re.error as exc:
        return (
            f'pattern should be regular expression but is invalid: {{"{exc.msg}",{exc.pos or 0}}}'
        )
    return None


def _check(problem: str | None) -> None:
    if problem is not None:
        raise PolicyInvalid(_VALIDATION_FAILED.format(problem))
