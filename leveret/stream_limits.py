"""The limits a stream's arguments and policies may set, read as RabbitMQ 3.10 reads them:
x-max-age durations and the bound on a segment's size."""

from __future__ import annotations

import re
from typing import Any

from .erlang_terms import Atom

# RabbitMQ's bound on x-stream-max-segment-size-bytes.
MAX_STREAM_SEGMENT_SIZE = 3_000_000_000
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
