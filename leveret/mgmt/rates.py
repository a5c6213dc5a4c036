"""Rates of change of counters and gauges, from samples taken every few seconds.

RabbitMQ's management plugin shows `<field>_details: {"rate": r}` next to each figure, where r is
the change per second over the last sampling interval; `RateTable` keeps the last two samples of
each object's figures and answers that.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass

# RabbitMQ's collect_statistics_interval.
SAMPLE_INTERVAL_SECONDS = 5.0


@dataclass(slots=True)
class _Sample:
    time: float
    values: dict[str, float]


class RateTable:
    """Per-object samples; an object is any hashable key (forget it when the object goes)."""

    def __init__(self) -> None:
        self._last: dict[Hashable, tuple[_Sample | None, _Sample]] = {}

    def observe(self, key: Hashable, now: float, values: Mapping[str, float]) -> None:
        previous = self._last.get(key)
        sample = _Sample(now, dict(values))
        self._last[key] = (previous[1] if previous is not None else None, sample)

    def changed(self, key: Hashable, values: Mapping[str, float]) -> bool:
        """Whether these values differ from the last ones observed for the object."""
        pair = self._last.get(key)
        return pair is None or pair[1].values != dict(values)

    def rate(self, key: Hashable, name: str) -> float:
        pair = self._last.get(key)
        if pair is None:
            return 0.0
        before, after = pair
        if before is None:
            return 0.0
        elapsed = after.time - before.time
        if elapsed <= 0:
            return 0.0
        change = after.values.get(name, 0.0) - before.values.get(name, 0.0)
        return round(change / elapsed, 1)

    def retain(self, keys: set[Hashable]) -> None:
        """Forget objects that no longer exist."""
        for key in [key for key in self._last if key not in keys]:
            del self._last[key]


def with_details(
    figures: Mapping[str, float | int], rates: RateTable, key: Hashable
) -> dict[str, object]:
    """`{name: value, name_details: {"rate": r}}` for each figure, as RabbitMQ lays them out."""
    laid_out: dict[str, object] = {}
    for name, value in figures.items():
        laid_out[name] = value
        laid_out[f"{name}_details"] = {"rate": rates.rate(key, name)}
    return laid_out
