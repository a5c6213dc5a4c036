"""Validation of exchange, queue and binding declarations, with RabbitMQ's reply codes and texts.

Every check takes names already stripped of CR and LF (`strip_cr_lf`), raises `AMQPError` with
the text RabbitMQ sends, and leaves the model untouched: callers look things up, call a check,
then act. Argument values arrive decoded from field tables; where the wire type matters to a
text (RabbitMQ names it, e.g. "of type 'signedint'"), pass the table's type letters as
`argument_types`, otherwise the type is inferred as pika would have encoded the value.
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from leveret.amqp.errors import AMQPError, ReplyCode
from leveret.erlang_terms import (  # noqa: F401 - re-exported for callers of this module
    FIELD_TYPE_NAMES,
    INTEGER_TYPES,
    TYPE_CLASSES,
    Atom,
    CharList,
    comparable_value,
    decimal_parts,
    erlang_float,
    erlang_term,
    erlang_text,
    field_type_name,
    to_bytes,
)
from leveret.queue_arguments import (
    check_name_argument,
    is_stream,
    validate_queue_arguments,
)
from leveret.stream_limits import MAX_STREAM_SEGMENT_SIZE

DEFAULT_VHOST = "/"
MAX_NAME_BYTES = 255

EXCHANGE_DECLARE = (40, 10)
EXCHANGE_DELETE = (40, 20)
EXCHANGE_BIND = (40, 30)
EXCHANGE_UNBIND = (40, 40)
QUEUE_DECLARE = (50, 10)
QUEUE_BIND = (50, 20)
QUEUE_UNBIND = (50, 50)
BASIC_PUBLISH = (60, 40)


# ---------------------------------------------------------------------------------------------
# Names.


def strip_cr_lf(name: str) -> str:
    """RabbitMQ drops CR and LF from exchange and queue names before using them."""
    if "\r" in name or "\n" in name:
        return name.replace("\r", "").replace("\n", "")
    return name


def describe(kind: str, name: str, vhost: str = DEFAULT_VHOST) -> str:
    """A resource as RabbitMQ names it in texts: "queue 'q' in vhost '/'"."""
    return f"{kind} '{name}' in vhost '{vhost}'"


def name_fits(name: str) -> bool:
    """Whether a name fits a short string (255 bytes of UTF-8)."""
    return len(name.encode("utf-8")) <= MAX_NAME_BYTES


def server_named_queue_name() -> str:
    """A fresh name for a queue declared with an empty name ("amq.gen-" and 22 random chars)."""
    token = base64.urlsafe_b64encode(secrets.token_bytes(16)).rstrip(b"=").decode("ascii")
    return "amq.gen-" + token


def check_name_not_reserved(kind: str, name: str, method: tuple[int, int]) -> None:
    """403 for a name in the reserved "amq." namespace (case-sensitive), on creation only."""
    if name.startswith("amq."):
        raise AMQPError(
            ReplyCode.ACCESS_REFUSED,
            f"{kind} name '{name}' contains reserved prefix 'amq.*'",
            method,
        )


def check_not_default_exchange(name: str, method: tuple[int, int]) -> None:
    """403 for any operation naming the default exchange where it cannot be used."""
    if name == "":
        raise AMQPError(
            ReplyCode.ACCESS_REFUSED, "operation not permitted on the default exchange", method
        )


def not_found(kind: str, name: str, vhost: str, method: tuple[int, int]) -> AMQPError:
    """404 "no queue 'q' in vhost '/'" (or exchange)."""
    return AMQPError(ReplyCode.NOT_FOUND, f"no {describe(kind, name, vhost)}", method)


# ---------------------------------------------------------------------------------------------
# Equivalence of a redeclaration with what exists.


def _field_value(value: Any) -> str:
    """RabbitMQ's `val/1` for a bare value (a property like durable, or an argument's value)."""
    if isinstance(value, Decimal):
        # A decimal is an Erlang pair {Scale, Digits}, which val/1 takes for {Type, Value}.
        scale, unscaled = decimal_parts(value)
        return f"the value '{unscaled}' of type '{scale}'"
    return f"'{erlang_text(value)}'"


_MISSING = object()


def _typed_value(value: Any, type_name: str) -> str:
    if value is _MISSING:
        return "none"
    return f"the value '{erlang_text(value)}' of type '{type_name}'"


def _inequivalent(
    key: str, resource: str, received: str, current: str, method: tuple[int, int]
) -> AMQPError:
    return AMQPError(
        ReplyCode.PRECONDITION_FAILED,
        f"inequivalent arg '{key}' for {resource}: received {received} but current is {current}",
        method,
    )


def check_field_equivalence(
    key: str, resource: str, current: Any, received: Any, method: tuple[int, int]
) -> None:
    """406 when a declared property (type, durable, auto_delete, ...) differs from the existing
    one."""
    if comparable_value(current, exact=True) != comparable_value(received, exact=True):
        raise _inequivalent(key, resource, _field_value(received), _field_value(current), method)


def check_arguments_equivalence(
    keys: tuple[str, ...],
    resource: str,
    current: Mapping[str, Any],
    current_types: Mapping[str, str],
    received: Mapping[str, Any],
    received_types: Mapping[str, str],
    method: tuple[int, int],
) -> None:
    """406 for the first of `keys` whose argument differs; other arguments are not compared.

    Values of types in one class (all integer widths, say) compare by value; values of
    different classes must be identical; a key present on one side only differs, except that
    a missing x-queue-type is the same as "classic".
    """
    for key in keys:
        old = current.get(key, _MISSING)
        new = received.get(key, _MISSING)
        if old is _MISSING and new is _MISSING:
            continue
        if old is not _MISSING and new is not _MISSING:
            old_type = field_type_name(old, current_types.get(key))
            new_type = field_type_name(new, received_types.get(key))
            old_class = TYPE_CLASSES.get(old_type, old_type)
            same_class = old_class == TYPE_CLASSES.get(new_type, new_type)
            if same_class and comparable_value(old) == comparable_value(new):
                continue
            if comparable_value(old, exact=True) == comparable_value(new, exact=True):
                continue
            raise _inequivalent(key, resource, _field_value(new), _field_value(old), method)
        if key == "x-queue-type" and (old if new is _MISSING else new) == "classic":
            continue
        old_text = _typed_value(old, field_type_name(old, current_types.get(key)))
        new_text = _typed_value(new, field_type_name(new, received_types.get(key)))
        raise _inequivalent(key, resource, new_text, old_text, method)


# ---------------------------------------------------------------------------------------------
# Exchanges.


@dataclass(frozen=True)
class ExchangeDecl:
    """An exchange's declared properties, as compared on redeclaration."""

    type: str
    durable: bool = False
    auto_delete: bool = False
    internal: bool = False
    arguments: Mapping[str, Any] = field(default_factory=dict)
    argument_types: Mapping[str, str] = field(default_factory=dict)


_EXCHANGE_COMPARED_ARGUMENTS = ("alternate-exchange",)


def check_exchange_equivalence(
    name: str,
    existing: ExchangeDecl,
    requested: ExchangeDecl,
    vhost: str = DEFAULT_VHOST,
    method: tuple[int, int] = EXCHANGE_DECLARE,
) -> None:
    """406 "inequivalent arg ..." when a redeclaration differs from the existing exchange."""
    resource = describe("exchange", name, vhost)
    check_field_equivalence("type", resource, Atom(existing.type), Atom(requested.type), method)
    check_field_equivalence("durable", resource, existing.durable, requested.durable, method)
    check_field_equivalence(
        "auto_delete", resource, existing.auto_delete, requested.auto_delete, method
    )
    check_field_equivalence("internal", resource, existing.internal, requested.internal, method)
    check_arguments_equivalence(
        _EXCHANGE_COMPARED_ARGUMENTS,
        resource,
        existing.arguments,
        existing.argument_types,
        requested.arguments,
        requested.argument_types,
        method,
    )


def check_exchange_declare(
    name: str,
    requested: ExchangeDecl,
    *,
    passive: bool,
    existing: ExchangeDecl | None,
    vhost: str = DEFAULT_VHOST,
    known_types: Callable[[str], object] | None = None,
    method: tuple[int, int] = EXCHANGE_DECLARE,
) -> bool:
    """Check an exchange.declare as RabbitMQ orders its checks; True when it must be created.

    `known_types(type_name)` raises the 503 for an unknown type (pass
    `leveret.exchanges.exchange_type`); it runs first and only for non-passive declares.
    """
    if passive:
        check_not_default_exchange(name, method)
        if existing is None:
            raise not_found("exchange", name, vhost, method)
        return False
    if known_types is not None:
        known_types(requested.type)
    check_not_default_exchange(name, method)
    if existing is None:
        check_name_not_reserved("exchange", name, method)
        check_name_argument(
            "alternate-exchange",
            describe("exchange", name, vhost),
            requested.arguments,
            requested.argument_types,
            method,
        )
        return True
    check_exchange_equivalence(name, existing, requested, vhost, method)
    return False


def check_exchange_delete(
    name: str,
    *,
    exists: bool,
    if_unused: bool,
    has_bindings_as_source: bool,
    vhost: str = DEFAULT_VHOST,
    method: tuple[int, int] = EXCHANGE_DELETE,
) -> bool:
    """Check an exchange.delete; True when there is an exchange to delete.

    Deleting a missing exchange succeeds; the default and "amq." exchanges cannot be deleted;
    if-unused refuses an exchange that is the source of any binding.
    """
    check_not_default_exchange(name, method)
    if name.startswith("amq."):
        raise AMQPError(
            ReplyCode.ACCESS_REFUSED,
            f"deletion of system {describe('exchange', name, vhost)} not allowed",
            method,
        )
    if not exists:
        return False
    if if_unused and has_bindings_as_source:
        raise AMQPError(
            ReplyCode.PRECONDITION_FAILED, f"{describe('exchange', name, vhost)} in use", method
        )
    return True


def check_publish_exchange(
    name: str,
    *,
    exists: bool,
    internal: bool,
    vhost: str = DEFAULT_VHOST,
    method: tuple[int, int] = BASIC_PUBLISH,
) -> None:
    """404 for publishing to a missing exchange, 403 for an internal one."""
    if not exists:
        raise not_found("exchange", name, vhost, method)
    if internal:
        raise AMQPError(
            ReplyCode.ACCESS_REFUSED,
            f"cannot publish to internal {describe('exchange', name, vhost)}",
            method,
        )


# ---------------------------------------------------------------------------------------------
# Bindings.


def check_bind(
    source: str,
    destination: str,
    destination_kind: str,
    *,
    source_exists: bool,
    destination_exists: bool,
    vhost: str = DEFAULT_VHOST,
    method: tuple[int, int] = QUEUE_BIND,
) -> None:
    """Check queue.bind / exchange.bind endpoints: 403 on the default exchange, 404 if missing.

    After this, the caller runs the source type's `validate_binding` (406) and, for a queue,
    the exclusive-access check (405), in that order, as RabbitMQ does.
    """
    if destination_kind == "exchange":
        check_not_default_exchange(destination, method)
    check_not_default_exchange(source, method)
    if not source_exists:
        raise not_found("exchange", source, vhost, method)
    if not destination_exists:
        raise not_found(destination_kind, destination, vhost, method)


def check_unbind(
    source: str,
    destination: str,
    destination_kind: str,
    method: tuple[int, int] = QUEUE_UNBIND,
) -> None:
    """Check queue.unbind / exchange.unbind: only the default exchange is refused (403).

    Unbinding from a missing exchange or queue, or a binding that does not exist, succeeds.
    """
    if destination_kind == "exchange":
        check_not_default_exchange(destination, method)
    check_not_default_exchange(source, method)


# ---------------------------------------------------------------------------------------------
# Queues.


@dataclass(frozen=True)
class QueueDecl:
    """A queue's declared properties, as compared on redeclaration."""

    durable: bool = False
    exclusive: bool = False
    auto_delete: bool = False
    arguments: Mapping[str, Any] = field(default_factory=dict)
    argument_types: Mapping[str, str] = field(default_factory=dict)

    def as_stored(self) -> QueueDecl:
        """The declaration as the queue keeps it: an exclusive queue is never durable."""
        if self.exclusive and self.durable:
            return QueueDecl(False, True, self.auto_delete, self.arguments, self.argument_types)
        return self


def home_node_down(name: str, vhost: str, node: str, method: tuple[int, int]) -> AMQPError:
    """404 for a durable queue whose home node cannot be reached, as RabbitMQ words it."""
    return AMQPError(
        ReplyCode.NOT_FOUND,
        f"home node '{node}' of durable {describe('queue', name, vhost)} is down or inaccessible",
        method,
    )


def exclusive_locked(
    name: str, vhost: str = DEFAULT_VHOST, method: tuple[int, int] = QUEUE_DECLARE
) -> AMQPError:
    """405 RESOURCE_LOCKED for using another connection's exclusive queue."""
    return AMQPError(
        ReplyCode.RESOURCE_LOCKED,
        f"cannot obtain exclusive access to locked {describe('queue', name, vhost)}. It could be "
        "originally declared on another connection or the exclusive property value does not "
        "match that of the original declaration.",
        method,
    )


def check_exclusive_access(
    name: str,
    owner: object | None,
    connection: object,
    vhost: str = DEFAULT_VHOST,
    method: tuple[int, int] = QUEUE_DECLARE,
) -> None:
    """405 when a queue is exclusive to a connection other than `connection`."""
    if owner is not None and owner is not connection:
        raise exclusive_locked(name, vhost, method)


def check_redeclare_owner(
    name: str,
    existing: QueueDecl,
    requested: QueueDecl,
    *,
    owner: object | None = None,
    connection: object | None = None,
    vhost: str = DEFAULT_VHOST,
    method: tuple[int, int] = QUEUE_DECLARE,
) -> None:
    """405 unless the redeclaration's exclusivity matches: same flag and, if set, same owner."""
    if existing.exclusive != requested.exclusive:
        raise exclusive_locked(name, vhost, method)
    if requested.exclusive and owner is not None and owner is not connection:
        raise exclusive_locked(name, vhost, method)


# Compared on redeclaration, in RabbitMQ's order; unknown x-arguments are never compared.
CLASSIC_QUEUE_ARGUMENTS = (
    "x-expires",
    "x-message-ttl",
    "x-dead-letter-exchange",
    "x-dead-letter-routing-key",
    "x-max-length",
    "x-max-length-bytes",
    "x-max-priority",
    "x-overflow",
    "x-queue-mode",
    "x-queue-version",
    "x-single-active-consumer",
    "x-queue-type",
    "x-queue-master-locator",
    "x-queue-leader-locator",
)


# A stream's arguments, in RabbitMQ's order (compared on redeclaration, validated on declare).
STREAM_QUEUE_ARGUMENTS = (
    "x-max-length-bytes",
    "x-queue-type",
    "x-max-age",
    "x-stream-max-segment-size-bytes",
    "x-initial-cluster-size",
    "x-queue-leader-locator",
)


def check_queue_equivalence(
    name: str,
    vhost: str,
    existing: QueueDecl,
    requested: QueueDecl,
    method: tuple[int, int] = QUEUE_DECLARE,
) -> None:
    """406 "inequivalent arg ..." when a redeclaration's durable, auto_delete or a known
    x-argument differs. Exclusivity is `check_redeclare_owner`'s job (405), checked first."""
    existing = existing.as_stored()
    requested = requested.as_stored()
    resource = describe("queue", name, vhost)
    check_field_equivalence("durable", resource, existing.durable, requested.durable, method)
    check_field_equivalence(
        "auto_delete", resource, existing.auto_delete, requested.auto_delete, method
    )
    check_arguments_equivalence(
        STREAM_QUEUE_ARGUMENTS if is_stream(existing.arguments) else CLASSIC_QUEUE_ARGUMENTS,
        resource,
        existing.arguments,
        existing.argument_types,
        requested.arguments,
        requested.argument_types,
        method,
    )


def check_stream_properties(
    name: str, requested: QueueDecl, vhost: str, method: tuple[int, int]
) -> None:
    """What RabbitMQ's stream type refuses once the arguments are valid, in its order."""
    resource = describe("queue", name, vhost)
    for refused, what in (
        (requested.auto_delete, "auto-delete"),
        (requested.exclusive, "exclusive-owner"),
        (not requested.durable, "non-durable"),
    ):
        if refused:
            raise AMQPError(
                ReplyCode.PRECONDITION_FAILED, f"invalid property '{what}' for {resource}", method
            )
    size = requested.arguments.get("x-stream-max-segment-size-bytes")
    if isinstance(size, int) and size > MAX_STREAM_SEGMENT_SIZE:
        raise AMQPError(
            ReplyCode.PRECONDITION_FAILED,
            "Exceeded max value for x-stream-max-segment-size-bytes",
            method,
        )


def check_queue_declare(
    name: str,
    requested: QueueDecl,
    *,
    passive: bool,
    existing: QueueDecl | None,
    owner: object | None = None,
    connection: object | None = None,
    server_named: bool = False,
    vhost: str = DEFAULT_VHOST,
    method: tuple[int, int] = QUEUE_DECLARE,
) -> bool:
    """Check a queue.declare as RabbitMQ orders its checks; True when it must be created.

    `name` is the name to use: for an empty one the caller generates a server name first and
    sets `server_named`, which skips the reserved-prefix check (applied to any other "amq."
    name on a non-passive declare, existing or not). `owner` is the existing queue's exclusive
    owner and `connection` the declaring one, compared by identity.
    """
    if server_named and not passive and is_stream(requested.arguments):
        raise AMQPError(
            ReplyCode.PRECONDITION_FAILED,
            "Cannot declare a server-named queue for type rabbit_stream_queue",
            method,
        )
    if passive:
        if existing is None:
            raise not_found("queue", name, vhost, method)
        check_exclusive_access(name, owner, connection, vhost, method)
        return False
    if not server_named:
        check_name_not_reserved("queue", name, method)
    if existing is not None:
        check_redeclare_owner(
            name,
            existing,
            requested,
            owner=owner,
            connection=connection,
            vhost=vhost,
            method=method,
        )
        check_queue_equivalence(name, vhost, existing, requested, method)
        return False
    validate_queue_arguments(
        describe("queue", name, vhost), requested.arguments, requested.argument_types, method
    )
    if is_stream(requested.arguments):
        check_stream_properties(name, requested, vhost, method)
    return True
