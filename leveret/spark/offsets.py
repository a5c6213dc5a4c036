"""Offsets of stream queues as the connector plans with them: where a query starts
(startingOffsets), how a micro-batch's budget is shared between queues, and how a range is cut
into partitions."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from .options import OptionError

OFFSET_HEADER = "x-stream-offset"
# How the header's entry starts in a headers table: its shortstr key, then the type of a long.
OFFSET_ENTRY = b"\x0fx-stream-offset" + b"l"
# Kafka's source spells earliest and latest as these offsets in a JSON map.
EARLIEST = -2
LATEST = -1


def stream_offset(encoded: bytes, at: int) -> int:
    """The x-stream-offset of a content header's properties whose entry starts at `at`."""
    value = at + len(OFFSET_ENTRY)
    return int.from_bytes(encoded[value : value + 8], "big", signed=True)


def offset_of(header: bytes) -> int:
    """A stream delivery's offset, from its content header payload (-1 if it has none)."""
    at = header.rfind(OFFSET_ENTRY)
    return stream_offset(header, at) if at >= 0 else -1


def starting_offsets(text: str, queues: Sequence[str]) -> dict[str, int]:
    """Each queue's start: an offset, EARLIEST or LATEST; OptionError names the option."""
    word = text.strip().lower()
    if word in ("earliest", "latest"):
        return dict.fromkeys(queues, EARLIEST if word == "earliest" else LATEST)
    try:
        given = json.loads(text)
    except ValueError:
        given = None
    if not isinstance(given, dict):
        raise OptionError(
            "option 'startingOffsets' must be earliest, latest or a JSON object of queue to "
            f'offset (-2 earliest, -1 latest), e.g. {{"events": 1200}}, not {text!r}'
        )
    missing = [queue for queue in queues if queue not in given]
    unknown = [queue for queue in given if queue not in queues]
    if missing or unknown:
        raise OptionError(
            "option 'startingOffsets' must give an offset for each queue of option 'queue' "
            f"and no other: missing {missing}, unknown {unknown}"
        )
    starts = {}
    for queue in queues:
        offset = given[queue]
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < EARLIEST:
            raise OptionError(
                f"option 'startingOffsets': the offset of queue '{queue}' must be an integer "
                f"of at least 0 (or -2 earliest, -1 latest), not {offset!r}"
            )
        starts[queue] = offset
    return starts


def shares(backlogs: Mapping[str, int], budget: int) -> dict[str, int]:
    """How many messages each queue gives a micro-batch of at most `budget`: an equal share
    each, and what a queue with less does not use goes to the others."""
    taken: dict[str, int] = {}
    left = budget
    ordered = sorted(backlogs, key=lambda queue: backlogs[queue])
    for position, queue in enumerate(ordered):
        share = max(1, left // (len(ordered) - position)) if left > 0 else 0
        taken[queue] = min(backlogs[queue], share)
        left -= taken[queue]
    return taken


def split(start: int, end: int, pieces: int) -> list[tuple[int, int]]:
    """[start, end) as at most `pieces` ranges of about equal length."""
    length = end - start
    if length <= 0:
        return []
    pieces = max(1, min(pieces, length))
    size = -(-length // pieces)
    return [(low, min(low + size, end)) for low in range(start, end, size)]
