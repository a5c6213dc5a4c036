"""How much of a stream is kept: its limits from arguments and policies, and which of its oldest
segments those limits let go (whole segments only, never the one being written)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..store import SegmentSpan
from ..stream_limits import AgeUnparsable, parse_max_age

# Leveret's default segment size for streams: recovery reads a segment whole, so it stays at
# the queue store's size rather than RabbitMQ's 500 MB (give x-stream-max-segment-size-bytes for
# larger ones).
DEFAULT_STREAM_SEGMENT_SIZE = 16 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Retention:
    max_bytes: int | None = None
    max_age_ms: int | None = None

    @property
    def limited(self) -> bool:
        return self.max_bytes is not None or self.max_age_ms is not None


def _text(value: Any) -> Any:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _policy_value(key: str, policy: Mapping[str, Any], operator: Mapping[str, Any]) -> Any:
    """As RabbitMQ's rabbit_policy:get: the policy's value, capped by the operator policy's."""
    mine, capped = policy.get(key), operator.get(key)
    if mine is not None and capped is not None and key == "max-length-bytes":
        return min(mine, capped)
    return mine if mine is not None else capped


def _age_ms(value: Any) -> int | None:
    if not isinstance(value, str):
        return None
    try:
        return parse_max_age(value)
    except AgeUnparsable:
        return None


def resolve_retention(
    arguments: Mapping[str, Any],
    policy: Mapping[str, Any] | None = None,
    operator_policy: Mapping[str, Any] | None = None,
) -> Retention:
    """For streams a policy wins over the queue's argument (RabbitMQ's policy_precedence)."""
    policy = policy or {}
    operator_policy = operator_policy or {}
    limits: dict[str, Any] = {}
    for key in ("max-length-bytes", "max-age"):
        value = _policy_value(key, policy, operator_policy)
        limits[key] = _text(value if value is not None else arguments.get(f"x-{key}"))
    max_bytes = limits["max-length-bytes"]
    return Retention(
        max_bytes if isinstance(max_bytes, int) and not isinstance(max_bytes, bool) else None,
        _age_ms(limits["max-age"]),
    )


def segment_size(arguments: Mapping[str, Any], policy: Mapping[str, Any] | None = None) -> int:
    """Segment size at creation (the policy's stream-max-segment-size-bytes wins)."""
    value = (policy or {}).get("stream-max-segment-size-bytes")
    if value is None:
        value = arguments.get("x-stream-max-segment-size-bytes")
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return DEFAULT_STREAM_SEGMENT_SIZE


def segments_to_drop(
    spans: Sequence[SegmentSpan],
    first_timestamps: Mapping[int, int],
    retention: Retention,
    now_ms: int,
) -> int:
    """How many of the oldest segments may go. The last (being written) always stays; a
    segment is too old once the segment after it began before the age limit, since every
    message of it is older than that."""
    total = sum(span.size for span in spans)
    count = 0
    while count < len(spans) - 1:
        span = spans[count]
        too_big = retention.max_bytes is not None and total > retention.max_bytes
        newer = first_timestamps.get(spans[count + 1].segment_id)
        too_old = (
            retention.max_age_ms is not None
            and newer is not None
            and newer < now_ms - retention.max_age_ms
        )
        if not (too_big or too_old):
            break
        total -= span.size
        count += 1
    return count
