"""Where a stream consumer starts (x-stream-offset), parsed as RabbitMQ 3.10 parses it."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..amqp.errors import AMQPError, ReplyCode
from ..stream_limits import AgeUnparsable, parse_max_age


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
