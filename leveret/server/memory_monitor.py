"""Raises the memory alarm while the node's resident memory is above the high watermark."""

from __future__ import annotations

import asyncio

from ..broker import Broker
from ..memory import resident_bytes


class MemoryMonitor:
    def __init__(self, broker: Broker, limit: int, interval: float = 1.0) -> None:
        self.broker = broker
        self.limit = limit
        self.interval = interval
        self._task: asyncio.Task[None] | None = None
        self._above = False

    def start(self) -> None:
        resident_bytes()  # opens what it reads while descriptors are to be had
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
