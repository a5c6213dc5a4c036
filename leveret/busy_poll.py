"""Busy polling: after input, the node polls its sockets for a while before it sleeps."""

from __future__ import annotations

import asyncio
import os
import time

# How long the event loop polls after the last input by default: longer than the gap between
# messages at 1,000 msg/s, so that a steady stream never lets the node sleep.
DEFAULT_WINDOW_MICROSECONDS = 2000


class BusyPoll:
    """Keeps the event loop polling, without blocking, for `window` seconds after input.

    A process that sleeps between messages wakes up late and runs slowly: on a virtual machine
    an idle CPU halts, and the caches are cold when it resumes. Parsing one publish took 2.5 µs
    on a node that never slept, 6.5 µs after a 50 µs sleep and 10-20 µs after 1 ms, and a lone
    message spent about 40 µs in a node that had slept. Erlang's schedulers busy-wait before
    they sleep for the same reason, though RabbitMQ 3.10.8's start script turns that off
    (`+sbwt none`) and binds its schedulers to cores instead (`+stbt db`).

    Polling is a callback the loop runs on every pass, which keeps it from blocking in epoll.
    A pass that brought no input gives the CPU to any other process that can run on it
    (sched_yield), so that a client or another node on the machine waits for it no longer
    than one pass; a pass with input does not, so a busy node pays one call a pass.
    """

    def __init__(self, window: float) -> None:
        self.window = window
        self._polling = False
        self._input_seen = False  # since the last pass
        self._last_input = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None

    def input_arrived(self) -> None:
        """A socket brought something: poll for `window` from now."""
        self._input_seen = True
        if self._polling or not self.window:
            return
        self._polling = True
        loop = self._loop
        if loop is None:
            # Looked up once: asyncio.get_running_loop() makes a getpid system call.
            loop = self._loop = asyncio.get_running_loop()
        loop.call_soon(self._pass)

    @property
    def polling(self) -> bool:
        return self._polling

    def _pass(self) -> None:
        now = time.monotonic()
        if self._input_seen:
            self._input_seen = False
            self._last_input = now
        elif now - self._last_input > self.window:
            self._polling = False
            return
        else:
            os.sched_yield()
        assert self._loop is not None
        self._loop.call_soon(self._pass)
