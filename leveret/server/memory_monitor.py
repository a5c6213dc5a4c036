"""Raises the memory alarm while the node's resident memory is above the high watermark."""

from __future__ import annotations

import asyncio
import os

from ..broker import Broker

_PAGE = os.sysconf("SC_PAGE_SIZE")


# What RabbitMQ assumes when the system does not say how much memory it has: a relative
# watermark of an unknown total must not become 0 bytes, an alarm that never clears.
UNKNOWN_TOTAL_MEMORY = 1024**3


def total_memory() -> int:
    """The machine's memory in bytes."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return UNKNOWN_TOTAL_MEMORY
    return total if total > 0 else UNKNOWN_TOTAL_MEMORY


def resident_bytes() -> int:
    with open("/proc/self/statm", "rb") as handle:
        return int(handle.read().split()[1]) * _PAGE


class MemoryMonitor:
    def __init__(self, broker: Broker, limit: int, interval: float = 1.0) -> None:
        self.broker = broker
        self.limit = limit
        self.interval = interval
        self._task: asyncio.Task[None] | None = None
        self._above = False

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()

    def check(self) -> None:
        # Only a change of what is measured raises or clears the alarm, so that an alarm set
        # another way (by an operator, or a test) is not overridden on the next tick.
        above = resident_bytes() > self.limit
        if above != self._above:
            self._above = above
            self.broker.set_alarm("memory", above)

    async def _run(self) -> None:
        while True:
            self.check()
            await asyncio.sleep(self.interval)
