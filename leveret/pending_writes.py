"""Connections with output waiting (clients', and the home side of other nodes' links): written
together at the end of the loop's turn, or at once when a batch a home node read produced it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


class PendingWrites:
    """The flushes of connections that wrote in this turn of the event loop (the broker's
    `pending_writes`): client connections and home sessions.

    A client's own frames are answered at the end of the turn, so that what many clients did
    in one turn goes out in one write per connection. On a queue's home node, a batch read
    from another node's link is already many messages: what it produced goes at once
    (`flush`), which spares its deliveries and confirms a turn of the loop on their way, the
    turn in which this node may be busy reading its publishers. (The other node takes the
    home node's deliveries in pieces, and its clients' output waits for the end of the turn.)"""

    def __init__(self) -> None:
        self._flushes: list[Callable[[], None]] = []
        self._scheduled = False
        # Looked up once: asyncio.get_running_loop() makes a getpid system call on every call.
        self._loop: asyncio.AbstractEventLoop | None = None

    def add(self, flush: Callable[[], None]) -> None:
        """`flush` runs at the end of this turn, or at the next `flush`, whichever is first."""
        self._flushes.append(flush)
        if not self._scheduled:
            self._scheduled = True
            loop = self._loop
            if loop is None:
                loop = self._loop = asyncio.get_running_loop()
            loop.call_soon(self._turn_ended)

    def _turn_ended(self) -> None:
        self._scheduled = False
        self.flush()

    def flush(self) -> None:
        """Write everything waiting now."""
        flushes, self._flushes = self._flushes, []
        for flush in flushes:
            flush()
