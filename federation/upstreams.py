"""Federation upstreams and upstream sets: their parameters, checked with RabbitMQ's texts."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from leveret.declare_rules import erlang_term

UPSTREAM = "federation-upstream"
UPSTREAM_SET = "federation-upstream-set"
ALL = "all"  # the implicit set of every upstream of the vhost
ACK_MODES = ("no-ack", "on-publish", "on-confirm")
DEFAULT_PREFETCH = 1000
DEFAULT_RECONNECT_SECONDS = 5.0

Check = Callable[[str, Any], str | None]


@dataclass(frozen=True, slots=True)
class Upstream:
    """One upstream as a link uses it: its parameter merged with a set's overrides."""

    name: str
    uris: tuple[str, ...]
    queue: str | None = None  # None: the downstream queue's name
    consumer_tag: str | None = None  # None: "federation-link-<name>"
    prefetch_count: int = DEFAULT_PREFETCH
    reconnect_delay: float = DEFAULT_RECONNECT_SECONDS
    ack_mode: str = "on-confirm"
    trust_user_id: bool = False

    def tag(self) -> str:
        return self.consumer_tag or f"federation-link-{self.name}"


def safe_uri(uri: str) -> str:
    """`uri` without its credentials, as links show it (RabbitMQ does the same)."""
    parts = urlsplit(uri)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port is not None else host
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))


# --- validation ---------------------------------------------------------------------------------


def _term(value: Any) -> str:
    """An Erlang term as RabbitMQ prints a JSON value in its validation texts."""
    if isinstance(value, list):
        return "[" + ",".join(_term(item) for item in value) + "]"
    if isinstance(value, tuple):
        return "{" + ",".join(_term(item) for item in value) + "}"
    return erlang_term(value)


def _binary(key: str, value: Any) -> str | None:
    return (
        None if isinstance(value, str) else f"{key} should be binary, actually was {_term(value)}"
    )


def _number(key: str, value: Any) -> str | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return None
    return f"{key} should be a number, actually was {_term(value)}"


def _boolean(key: str, value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    return f"{key} should be boolean, actually was {_term(value)}"


def _ack_mode(key: str, value: Any) -> str | None:
    if value in ACK_MODES:
        return None
    return f"{key} should be one of {_term(list(ACK_MODES))}, actually was {_term(value)}"


def _uri(key: str, value: Any) -> str | None:
    uris = value if isinstance(value, list) else [value] if isinstance(value, str) else None
    if uris is None:
        return f"{key} should be list, actually was {_term(value)}"
    for uri in uris:
        if not isinstance(uri, str):
            return f"{key} should be list, actually was {_term(value)}"
        scheme = urlsplit(uri).scheme
        if not scheme:
            return f'"{uri}" not a valid URI: {{{{unable_to_parse_uri,no_scheme}},"{uri}"}}'
        if scheme not in ("amqp", "amqps"):
            return f'"{uri}" not a valid URI: {{{{unable_to_parse_uri,unknown_scheme}},"{uri}"}}'
    return None


# The keys of an upstream in RabbitMQ's order of checking, and the check of each. Keys only
# exchange federation reads are accepted (and ignored by queue links), as RabbitMQ does.
_KEYS: dict[str, Check] = {
    "uri": _uri,
    "exchange": _binary,
    "queue": _binary,
    "consumer-tag": _binary,
    "prefetch-count": _number,
    "reconnect-delay": _number,
    "max-hops": _number,
    "expires": _number,
    "message-ttl": _number,
    "trust-user-id": _boolean,
    "ack-mode": _ack_mode,
    "ha-policy": _binary,
    "queue-type": _binary,
    "bind-nowait": _boolean,
}


def _check_keys(name: str, value: Mapping[str, Any], required: tuple[str, ...]) -> str | None:
    for key, check in _KEYS.items():
        if key not in value:
            if key in required:
                return f'Key "{key}" not found in {name}'
            continue
        problem = check(key, value[key])
        if problem is not None:
            return problem
    unknown = [(key, item) for key, item in value.items() if key not in _KEYS and key != "upstream"]
    if unknown:
        return f"Unrecognised terms {_term(unknown)} in {name}"
    return None


def validate_upstream(vhost: str, name: str, value: Any) -> str | None:
    """Why `value` cannot be the federation-upstream `name`, or None."""
    if not isinstance(value, dict):
        return f"{_term(value)} is not a valid federation upstream"
    return _check_keys(name, value, ("uri",))


def validate_upstream_set(vhost: str, name: str, value: Any) -> str | None:
    """Why `value` cannot be the federation-upstream-set `name`, or None: a list of objects
    naming an upstream, each with overrides of that upstream's keys."""
    if not isinstance(value, list):
        return f"{_term(value)} is not a valid federation upstream set"
    for member in value:
        if not isinstance(member, dict):
            return f"{_term(member)} is not a valid federation upstream set member"
        if "upstream" not in member:
            return f'Key "upstream" not found in {name}'
        problem = _binary("upstream", member["upstream"]) or _check_keys(name, member, ())
        if problem is not None:
            return problem
    return None


# --- resolution ---------------------------------------------------------------------------------


def upstream_from(name: str, value: Mapping[str, Any]) -> Upstream | None:
    """The upstream a (validated) parameter value describes; None when it has no URI."""
    uri = value.get("uri")
    uris = tuple(uri) if isinstance(uri, list) else (uri,) if isinstance(uri, str) else ()
    if not uris:
        return None
    return Upstream(
        name,
        uris,
        queue=value.get("queue"),
        consumer_tag=value.get("consumer-tag"),
        prefetch_count=int(value.get("prefetch-count", DEFAULT_PREFETCH)),
        reconnect_delay=float(value.get("reconnect-delay", DEFAULT_RECONNECT_SECONDS)),
        ack_mode=value.get("ack-mode", "on-confirm"),
        trust_user_id=bool(value.get("trust-user-id", False)),
    )


def upstreams_of(
    definition: Mapping[str, Any],
    upstreams: Mapping[str, Mapping[str, Any]],
    sets: Mapping[str, Any],
) -> list[Upstream]:
    """The upstreams a policy definition federates a queue from, given the vhost's upstream
    and upstream-set parameters (by name); names of missing upstreams are skipped."""
    chosen: list[tuple[str, Mapping[str, Any]]] = []
    single = definition.get(UPSTREAM)
    set_name = definition.get(UPSTREAM_SET)
    if isinstance(single, str):
        chosen = [(single, {})]
    elif isinstance(single, list):
        chosen = [(name, {}) for name in single if isinstance(name, str)]
    elif set_name == ALL:
        chosen = [(name, {}) for name in sorted(upstreams)]
    elif isinstance(set_name, str) and isinstance(sets.get(set_name), list):
        chosen = [
            (member["upstream"], member)
            for member in sets[set_name]
            if isinstance(member, dict) and isinstance(member.get("upstream"), str)
        ]
    found = []
    for name, overrides in chosen:
        base = upstreams.get(name)
        if base is None:
            continue
        merged = {**base, **{k: v for k, v in overrides.items() if k != "upstream"}}
        upstream = upstream_from(name, merged)
        if upstream is not None:
            found.append(upstream)
    return found
