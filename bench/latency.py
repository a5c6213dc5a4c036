"""Bounded-memory latency samples that merge across processes and yield percentiles."""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Sequence

# 4 M samples (32 MiB) per recorder; beyond that every other sample is dropped and the stride
# doubles, which keeps an even spread over the run rather than only its beginning.
DEFAULT_CAPACITY = 4 * 1024 * 1024


class LatencyRecorder:
    """Collects latencies in nanoseconds, thinning itself evenly when it reaches capacity."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self._samples = array("q")
        self._capacity = capacity
        self.stride = 1
        self.seen = 0

    def record(self, received_ns: int, stamps: Sequence[int]) -> None:
        """Record latencies of messages received at `received_ns`; negative stamps are skipped."""
        self.seen += len(stamps)
        if self.stride > 1:
            stamps = stamps[:: self.stride]
        self._samples.extend([received_ns - stamp for stamp in stamps if stamp >= 0])
        if len(self._samples) > self._capacity:
            self._samples = self._samples[::2]
            self.stride *= 2

    def to_bytes(self) -> bytes:
        return self._samples.tobytes()


def merge_samples(chunks: Iterable[bytes]) -> list[int]:
    merged = array("q")
    for chunk in chunks:
        merged.frombytes(chunk)
    return sorted(merged)


def percentile(sorted_samples: Sequence[int], fraction: float) -> int:
    """Nearest-rank percentile of already sorted samples."""
    if not sorted_samples:
        raise ValueError("no samples")
    rank = max(1, math.ceil(fraction * len(sorted_samples)))
    return sorted_samples[rank - 1]


def summarise_us(sorted_samples: Sequence[int]) -> dict[str, float | int | None]:
    """p50 / p95 / p99 / min / max / mean in microseconds (None when nothing was measured)."""
    if not sorted_samples:
        return {
            "p50": None,
            "p95": None,
            "p99": None,
            "min": None,
            "max": None,
            "mean": None,
            "samples": 0,
        }
    return {
        "p50": round(percentile(sorted_samples, 0.50) / 1000, 1),
        "p95": round(percentile(sorted_samples, 0.95) / 1000, 1),
        "p99": round(percentile(sorted_samples, 0.99) / 1000, 1),
        "min": round(sorted_samples[0] / 1000, 1),
        "max": round(sorted_samples[-1] / 1000, 1),
        "mean": round(sum(sorted_samples) / len(sorted_samples) / 1000, 1),
        "samples": len(sorted_samples),
    }
