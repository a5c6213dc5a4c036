"""RabbitMQ's declare-time checks of x-arguments: those of a new queue, classic or stream, each
with its validator in RabbitMQ's order and the error term it prints, and the arguments that name
an exchange (a queue's dead-letter exchange, an exchange's alternate exchange)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from leveret.amqp.errors import AMQPError, ReplyCode
from leveret.erlang_terms import (
    INTEGER_TYPES,
    Atom,
    CharList,
    erlang_term,
    field_type_name,
    to_bytes,
)
from leveret.stream_limits import max_age_error

_EMPTY: Mapping[str, Any] = {}


def check_name_argument(
    key: str,
    resource: str,
    arguments: Mapping[str, Any],
    types: Mapping[str, str],
    method: tuple[int, int],
) -> None:
    """406 when an argument naming an exchange (AE, DLX) is not a long string."""
    if key not in arguments:
        return
    type_name = field_type_name(arguments[key], types.get(key))
    if type_name != "longstr":
        raise AMQPError(
            ReplyCode.PRECONDITION_FAILED,
            f"invalid type '{type_name}' for arg '{key}' in {resource}",
            method,
        )


def is_stream(arguments: Mapping[str, Any]) -> bool:
    return arguments.get("x-queue-type") in ("stream", b"stream")


# Arguments of other queue types: refused on a classic queue rather than ignored.
OTHER_QUEUE_TYPE_ARGUMENTS = frozenset(
    {
        "x-dead-letter-strategy",
        "x-delivery-limit",
        "x-initial-cluster-size",
        "x-max-age",
        "x-max-in-memory-bytes",
        "x-max-in-memory-length",
        "x-quorum-initial-group-size",
        "x-stream-max-segment-size-bytes",
    }
)

# Arguments of the other queue types, refused on a stream rather than ignored.
STREAM_REFUSED_ARGUMENTS = frozenset(
    {
        "x-expires",
        "x-message-ttl",
        "x-dead-letter-exchange",
        "x-dead-letter-routing-key",
        "x-max-length",
        "x-max-priority",
        "x-overflow",
        "x-queue-mode",
        "x-queue-version",
        "x-single-active-consumer",
        "x-queue-master-locator",
        "x-dead-letter-strategy",
        "x-max-in-memory-length",
        "x-max-in-memory-bytes",
        "x-quorum-initial-group-size",
        "x-delivery-limit",
    }
)


_MAX_EXPIRY_MS = 315_360_000_000  # ten years, RabbitMQ's bound on TTLs and expiries
MAX_SUPPORTED_PRIORITY = 255
OVERFLOW_MODES = ("drop-head", "reject-publish", "reject-publish-dlx")
QUEUE_MODES = ("default", "lazy")
QUEUE_VERSIONS = (1, 2)
QUEUE_LEADER_LOCATORS = ("client-local", "balanced", "random", "least-leaders")
KNOWN_QUEUE_TYPES = ("classic", "quorum", "stream")
SUPPORTED_QUEUE_TYPES = ("classic", "stream")

# A validator returns None when the value is acceptable, else the error term RabbitMQ prints.
_Validator = Callable[[Any, str, Mapping[str, Any]], Any]


def _integer(value: Any, type_name: str) -> Any:
    if type_name not in INTEGER_TYPES:
        return CharList.of(f"expected integer, got {type_name}")
    return None


def _non_negative(value: Any, type_name: str, arguments: Mapping[str, Any]) -> Any:
    error = _integer(value, type_name)
    if error is None and value < 0:
        return (Atom("value_negative"), value)
    return error


def _expiry(value: int) -> Any:
    if value < 0:
        return (Atom("value_negative"), value)
    if value > _MAX_EXPIRY_MS:
        return (Atom("value_too_large"), value)
    return None


def _message_ttl(value: Any, type_name: str, arguments: Mapping[str, Any]) -> Any:
    return _integer(value, type_name) or _expiry(value)


def _expires(value: Any, type_name: str, arguments: Mapping[str, Any]) -> Any:
    error = _integer(value, type_name)
    if error is not None:
        return error
    if value == 0:
        return (Atom("value_zero"), value)
    return _expiry(value)


def _max_priority(value: Any, type_name: str, arguments: Mapping[str, Any]) -> Any:
    error = _non_negative(value, type_name, arguments)
    if error is None and value > MAX_SUPPORTED_PRIORITY:
        return (Atom("max_value_exceeded"), value)
    return error


def _unacceptable(type_name: str) -> Any:
    return (Atom("unacceptable_type"), Atom(type_name))


def _boolean(value: Any, type_name: str, arguments: Mapping[str, Any]) -> Any:
    return None if type_name == "bool" else _unacceptable(type_name)


def _dead_letter_exchange(value: Any, type_name: str, arguments: Mapping[str, Any]) -> Any:
    return None if type_name == "longstr" else _unacceptable(type_name)


def _dead_letter_routing_key(value: Any, type_name: str, arguments: Mapping[str, Any]) -> Any:
    if type_name != "longstr":
        return _unacceptable(type_name)
    if "x-dead-letter-exchange" not in arguments:
        return Atom("routing_key_but_no_dlx_defined")
    return None


def _one_of(choices: tuple[str, ...], invalid: Callable[[Any], Any]) -> _Validator:
    def check(value: Any, type_name: str, arguments: Mapping[str, Any]) -> Any:
        if type_name != "longstr":
            return _unacceptable(type_name)
        return None if value in choices else invalid(value)

    return check


def _unsupported(what: str) -> Callable[[Any], Any]:
    def error(value: Any) -> Any:
        raw = to_bytes(value) if isinstance(value, (str, bytes)) else str(value).encode()
        return CharList(f"unsupported {what} '".encode() + raw + b"'")

    return error


def _queue_version(value: Any, type_name: str, arguments: Mapping[str, Any]) -> Any:
    error = _non_negative(value, type_name, arguments)
    if error is None and value not in QUEUE_VERSIONS:
        return CharList.of(f"unsupported queue version '{value}'")
    return error


_queue_type = _one_of(KNOWN_QUEUE_TYPES, _unsupported("queue type"))

# RabbitMQ's declare-time validators for a classic queue, in the order it runs them.
_CLASSIC_VALIDATORS: tuple[tuple[str, _Validator], ...] = (
    ("x-expires", _expires),
    ("x-message-ttl", _message_ttl),
    ("x-dead-letter-exchange", _dead_letter_exchange),
    ("x-dead-letter-routing-key", _dead_letter_routing_key),
    ("x-max-length", _non_negative),
    ("x-max-length-bytes", _non_negative),
    ("x-max-priority", _max_priority),
    ("x-overflow", _one_of(OVERFLOW_MODES, lambda value: Atom("invalid_overflow"))),
    ("x-queue-mode", _one_of(QUEUE_MODES, _unsupported("queue mode"))),
    ("x-queue-version", _queue_version),
    ("x-single-active-consumer", _boolean),
    ("x-queue-type", _queue_type),
    (
        "x-queue-leader-locator",
        _one_of(QUEUE_LEADER_LOCATORS, lambda value: Atom("invalid_queue_locator_arg")),
    ),
)


def _invalid_arg(key: str, resource: str, error: Any, method: tuple[int, int]) -> AMQPError:
    return AMQPError(
        ReplyCode.PRECONDITION_FAILED,
        f"invalid arg '{key}' for {resource}: {erlang_term(error)}",
        method,
    )


def validate_queue_arguments(
    resource: str,
    arguments: Mapping[str, Any],
    argument_types: Mapping[str, str] | None,
    method: tuple[int, int],
) -> None:
    """406 for the first x-argument RabbitMQ would refuse when creating the queue `resource`
    ("queue 'q' in vhost '/'"), a classic queue or a stream.

    Unknown arguments are accepted. Arguments of other queue types are refused, and so is an
    x-queue-type other than classic or stream (quorum), which Leveret does not implement.
    """
    if not arguments:
        return
    types = argument_types or _EMPTY
    check_name_argument("x-dead-letter-exchange", resource, arguments, types, method)
    if "x-queue-type" in arguments:
        value = arguments["x-queue-type"]
        type_name = field_type_name(value, types.get("x-queue-type"))
        error = _queue_type(value, type_name, arguments)
        if error is None and value not in SUPPORTED_QUEUE_TYPES:
            error = _unsupported("queue type")(value)
        if error is not None:
            raise _invalid_arg("x-queue-type", resource, error, method)
    if is_stream(arguments):
        validators, refused, queue_type = (
            _STREAM_VALIDATORS,
            STREAM_REFUSED_ARGUMENTS,
            "rabbit_stream_queue",
        )
    else:
        validators, refused, queue_type = (
            _CLASSIC_VALIDATORS,
            OTHER_QUEUE_TYPE_ARGUMENTS,
            "rabbit_classic_queue",
        )
    for key, validator in validators:
        if key in arguments:
            value = arguments[key]
            error = validator(value, field_type_name(value, types.get(key)), arguments)
            if error is not None:
                raise _invalid_arg(key, resource, error, method)
    for key in arguments:
        if key in refused:
            raise AMQPError(
                ReplyCode.PRECONDITION_FAILED,
                f"invalid arg '{key}' for {resource} of queue type {queue_type}",
                method,
            )


def _max_age(value: Any, type_name: str, arguments: Mapping[str, Any]) -> Any:
    return max_age_error(value, type_name)


def _initial_cluster_size(value: Any, type_name: str, arguments: Mapping[str, Any]) -> Any:
    error = _non_negative(value, type_name, arguments)
    if error is None and value == 0:
        return (Atom("value_zero"), value)
    return error


# RabbitMQ's declare-time validators for a stream, in the order it runs them.
_STREAM_VALIDATORS: tuple[tuple[str, _Validator], ...] = (
    ("x-max-length-bytes", _non_negative),
    ("x-max-age", _max_age),
    ("x-stream-max-segment-size-bytes", _non_negative),
    ("x-initial-cluster-size", _initial_cluster_size),
    (
        "x-queue-leader-locator",
        _one_of(QUEUE_LEADER_LOCATORS, lambda value: Atom("invalid_queue_locator_arg")),
    ),
)
