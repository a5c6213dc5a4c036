"""Per-vhost and per-user limits as RabbitMQ 3.10 has them: their names, checks and refusals.

Vhost limits are the runtime parameter `vhost-limits`/`limits` of their vhost, as in RabbitMQ;
user limits belong to the user's record. Both are decided by the metadata store, so every node
enforces the same ones. A negative value, or none, means no limit; 0 refuses everything.

Connections and channels are counted on the node that has them: a limit of N connections lets
each node of a cluster accept N (RabbitMQ counts across the cluster). Queues are counted from the
replicated metadata, so max-queues holds for the whole cluster.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .amqp.errors import AMQPError, ReplyCode

VHOST_LIMITS_COMPONENT = "vhost-limits"
VHOST_LIMITS_NAME = "limits"
VHOST_LIMIT_NAMES = ("max-connections", "max-queues")
USER_LIMIT_NAMES = ("max-connections", "max-channels")


class LimitInvalid(ValueError):
    """A limit that cannot be set; the text is RabbitMQ's reason."""


def erlang_term(value: Any) -> str:
    """`value` as RabbitMQ prints the JSON it could not use (strings as binaries)."""
    if isinstance(value, str):
        return '<<"' + value + '">>'
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ",".join(erlang_term(item) for item in value) + "]"
    if isinstance(value, dict):
        items = ",".join(f"{{{erlang_term(k)},{erlang_term(v)}}}" for k, v in value.items())
        return "[" + items + "]"
    return str(value)


def checked_limits(limits: Mapping[str, Any], known: Iterable[str], scope: str) -> dict[str, int]:
    """`limits` when every name is known and every value a whole number; else LimitInvalid with
    RabbitMQ's text (`scope` is "limits" for a vhost, "user-limits" for a user)."""
    known = tuple(known)
    unknown = [(name, value) for name, value in limits.items() if name not in known]
    if unknown:
        terms = ",".join(f"{{{erlang_term(name)},{erlang_term(value)}}}" for name, value in unknown)
        raise LimitInvalid(f"Unrecognised terms [{terms}] in {scope}")
    for name, value in limits.items():
        if isinstance(value, bool) or not isinstance(value, int):
            raise LimitInvalid(f"{name} should be a number, actually was {erlang_term(value)}")
    return dict(limits)


def limit_of(limits: Mapping[str, Any] | None, name: str) -> int | None:
    """The limit in force: None when there is none (absent or negative)."""
    if not limits:
        return None
    value = limits.get(name)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        return None
    return value


def vhost_limits_value(value: Any) -> dict[str, Any]:
    """The limits a `vhost-limits` parameter holds ({} for RabbitMQ's [] after a clear)."""
    return dict(value) if isinstance(value, dict) else {}


# --- refusals, in RabbitMQ's words -------------------------------------------------------------


def vhost_connections_refused(
    vhost: str, user: str, limit: int, method: tuple[int, int]
) -> AMQPError:
    return AMQPError(
        ReplyCode.NOT_ALLOWED,
        f"access to vhost '{vhost}' refused for user '{user}': connection limit ({limit}) is "
        "reached",
        method,
    )


def user_connections_refused(user: str, limit: int, method: tuple[int, int]) -> AMQPError:
    return AMQPError(
        ReplyCode.NOT_ALLOWED,
        f"connection refused for user '{user}': user connection limit ({limit}) is reached",
        method,
    )


def user_channels_refused(user: str, limit: int, method: tuple[int, int]) -> AMQPError:
    # A hard error: RabbitMQ closes the whole connection.
    return AMQPError(
        ReplyCode.NOT_ALLOWED,
        f"number of channels opened for user '{user}' has reached the maximum allowed user "
        f"limit of ({limit})",
        method,
        hard=True,
    )


def queue_limit_text(queue: str, vhost: str, limit: int) -> str:
    return f"cannot declare queue '{queue}': queue limit in vhost '{vhost}' ({limit}) is reached"


def queues_refused(queue: str, vhost: str, limit: int, method: tuple[int, int]) -> AMQPError:
    return AMQPError(ReplyCode.PRECONDITION_FAILED, queue_limit_text(queue, vhost, limit), method)


def check_queue_limit(
    limits: Mapping[str, Any] | None, vhost: Any, queue: str, method: tuple[int, int]
) -> None:
    """Refuse a new queue in `vhost` (a VirtualHost) once it has max-queues of them, counting
    those homed on other nodes."""
    limit = limit_of(limits, "max-queues")
    if limit is not None and len(vhost.queues) + len(vhost.remote_queues) >= limit:
        raise queues_refused(queue, vhost.name, limit, method)
