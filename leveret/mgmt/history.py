"""Recent samples of the figures behind rates, for charts: RabbitMQ's `msg_rates_age` /
`msg_rates_incr` and `lengths_age` / `lengths_incr` query parameters add `samples`, `avg` and
`avg_rate` to each `<figure>_details`.

The node's totals are always kept. A queue's history is kept only while someone looks at it (its
page asked for samples in the last few minutes): a node with 10,000 queues would otherwise hold
an hour of samples for each.
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .rates import SAMPLE_INTERVAL_SECONDS

# The longest age a chart shows (the UI's "1 h"; RabbitMQ's basic retention keeps an hour too).
HISTORY_SECONDS = 3600.0
# A queue's history is kept this long after its page last asked for samples.
WATCH_SECONDS = 600.0
# A range asks for at most this many samples per figure; a smaller increment is widened.
MAX_SAMPLES = 720


@dataclass(frozen=True, slots=True)
class SampleRange:
    """`<prefix>_age` and `<prefix>_incr` of a request, in seconds."""

    age: int
    incr: int

    @classmethod
    def from_query(cls, query: Mapping[str, str], prefix: str) -> SampleRange | None:
        """The range asked for, or None when it is absent or not two positive integers (the
        figures are then shown without samples)."""
        age_text = query.get(f"{prefix}_age", "")
        incr_text = query.get(f"{prefix}_incr", "")
        if not (age_text.isdigit() and incr_text.isdigit()):
            return None
        age = min(int(age_text), int(HISTORY_SECONDS))
        incr = max(int(incr_text), -(-age // MAX_SAMPLES))
        if age <= 0 or incr <= 0:
            return None
        return cls(age, incr)


class History:
    """Figures by object key, one entry per sampling tick, oldest first."""

    def __init__(self, always: Iterable[Hashable] = ()) -> None:
        self._keep = int(HISTORY_SECONDS / SAMPLE_INTERVAL_SECONDS) + 2
        self._times: dict[Hashable, deque[float]] = {}
        self._values: dict[Hashable, deque[Mapping[str, float]]] = {}
        self._always = set(always)
        # Monotonic time until which a watched queue's history is kept.
        self._watched: dict[Hashable, float] = {}

    def watch(self, key: Hashable, now: float) -> None:
        self._watched[key] = now + WATCH_SECONDS

    def wanted(self, key: Hashable) -> bool:
        return key in self._always or key in self._watched

    def record(self, key: Hashable, wall: float, values: Mapping[str, float]) -> None:
        if not self.wanted(key):
            return
        times = self._times.setdefault(key, deque(maxlen=self._keep))
        times.append(wall)
        self._values.setdefault(key, deque(maxlen=self._keep)).append(dict(values))

    def retain(self, now: float, keys: set[Hashable]) -> None:
        """Forget objects that are gone and queues nobody has looked at for a while."""
        for key, until in list(self._watched.items()):
            if until < now or key not in keys:
                del self._watched[key]
        for key in [key for key in self._times if not self.wanted(key)]:
            del self._times[key]
            del self._values[key]

    def add_samples(
        self,
        section: dict[str, Any],
        key: Hashable,
        names: Iterable[str],
        asked: SampleRange,
        wall: float,
    ) -> None:
        """Put `samples` (newest first, timestamps in ms), `avg` and `avg_rate` into each
        `<name>_details` of `section`."""
        times = self._times.get(key, deque())
        values = self._values.get(key, deque())
        newest = int(wall // asked.incr) * asked.incr
        stamps = range(newest, newest - asked.age - 1, -asked.incr)
        for name in names:
            details = section.get(f"{name}_details")
            if not isinstance(details, dict):
                continue
            samples: list[dict[str, float | int]] = []
            for stamp in stamps:
                at = bisect.bisect_right(times, stamp) - 1
                if at < 0:
                    break  # nothing recorded that early
                samples.append({"sample": values[at].get(name, 0.0), "timestamp": stamp * 1000})
            details["samples"] = samples
            if samples:
                details["avg"] = round(sum(s["sample"] for s in samples) / len(samples), 1)
                span = (samples[0]["timestamp"] - samples[-1]["timestamp"]) / 1000
                change = samples[0]["sample"] - samples[-1]["sample"]
                details["avg_rate"] = round(change / span, 1) if span > 0 else 0.0
            else:
                details["avg"] = 0.0
                details["avg_rate"] = 0.0


_LENGTHS = ("messages", "messages_ready", "messages_unacknowledged")


def add_asked_samples(
    history: History,
    key: Hashable,
    query: Mapping[str, str],
    message_stats: dict[str, Any] | None,
    lengths: dict[str, Any] | None,
    wall: float,
) -> None:
    """Samples for the ranges the request asked for: message rates into `message_stats`,
    queue lengths into `lengths` (the overview's queue_totals, or the queue itself)."""
    rates = SampleRange.from_query(query, "msg_rates")
    if rates is not None and message_stats is not None:
        names = [name[: -len("_details")] for name in message_stats if name.endswith("_details")]
        history.add_samples(message_stats, key, names, rates, wall)
    sizes = SampleRange.from_query(query, "lengths")
    if sizes is not None and lengths is not None:
        history.add_samples(lengths, key, _LENGTHS, sizes, wall)
