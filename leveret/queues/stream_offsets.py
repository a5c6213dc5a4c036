"""Where a stream consumer starts (x-stream-offset) and how old a stream's messages may grow
(x-max-age), parsed as RabbitMQ 3.10 parses them."""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..amqp.errors import AMQPError, ReplyCode
from ..erlang_terms import Atom

# RabbitMQ's units of x-max-age and of interval offsets, in milliseconds.
_UNIT_MS = {
    "Y": 365 * 86_400_000,
    "M": 30 * 86_400_000,
    "D": 86_400_000,
    "h": 3_600_000,
    "m": 60_000,
    "s": 1000,
}
_AGE = re.compile(r"([0-9]*)(.*)", re.DOTALL)


class AgeUnparsable(Exception):
    """Not even a number at the start: RabbitMQ's parser crashes on it (541 at consume)."""


def parse_max_age(text: str | bytes) -> int | None:
    """Milliseconds of "7D", "12h", "30m", "10s" (RabbitMQ's Y M D h m s); None if invalid."""
    raw = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    match = _AGE.fullmatch(raw)
    assert match is not None  # the pattern matches any text
    digits, unit = match.groups()
    if not digits:
        raise AgeUnparsable(raw)
    value = int(digits)
    if value <= 0 or unit not in _UNIT_MS:
        return None
    return value * _UNIT_MS[unit]


def max_age_error(value: Any, type_name: str) -> Any:
    """The error term RabbitMQ prints for an x-max-age argument, or None when it is valid."""
    if type_name != "longstr":
        return (Atom("unacceptable_type"), Atom(type_name))
    try:
        valid = parse_max_age(value) is not None
    except AgeUnparsable:
        valid = False
    return None if valid else Atom("invalid_max_age")


@dataclass(frozen=True, slots=True)
class OffsetSpec:
    """Where to start: "first", "last", "next", an "offset", or a "timestamp" (epoch ms)."""

    kind: str
    value: int = 0


NEXT = OffsetSpec("next")


def parse_offset(
    arguments: Mapping[str, Any], now_ms: int, describe_queue: str, method: tuple[int, int]
) -> OffsetSpec:
    """The consumer argument x-stream-offset as RabbitMQ reads it; its refusals as it words them
    (406 for an interval it cannot read, 541 where its own parser fails). A timestamp field
    arrives decoded as a datetime, on this node or from another one."""
    if "x-stream-offset" not in arguments:
        return NEXT
    value = arguments["x-stream-offset"]
    if isinstance(value, (str, bytes)):
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
        if text in ("first", "last", "next"):
            return OffsetSpec(text)
        try:
            age = parse_max_age(text)
        except AgeUnparsable:
            raise AMQPError(ReplyCode.INTERNAL_ERROR, "", method) from None
        if age is None:
            raise AMQPError(
                ReplyCode.PRECONDITION_FAILED,
                f"invalid arg 'x-stream-offset' for {describe_queue}: "
                f'{{invalid_stream_offset_arg,{{longstr,<<"{text}">>}}}}',
                method,
            )
        return OffsetSpec("timestamp", now_ms - age)
    if isinstance(value, datetime.datetime):
        return OffsetSpec("timestamp", int(value.timestamp()) * 1000)
    if isinstance(value, int) and not isinstance(value, bool):
        return OffsetSpec("offset", value)
    # Anything else (a boolean, a float, a table) makes RabbitMQ's stream reader crash.
    raise AMQPError(ReplyCode.INTERNAL_ERROR, "", method)
