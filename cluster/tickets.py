"""Operations that outlive the request that started them, polled by ticket.

The management API answers each request synchronously, so a metadata change (which waits for
a majority) is started by one request and its outcome fetched by the next ones.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections import OrderedDict
from collections.abc import Coroutine
from typing import Any

from cluster.errors import ClusterError, ClusterUnavailable, OutcomeUnknown

# Finished outcomes are kept this long, and at most this many tickets at all.
KEEP_SECONDS = 300.0
MAX_TICKETS = 10_000


class Tickets:
    """Ticket id -> a running task or its outcome."""

    def __init__(self) -> None:
        self._tasks: OrderedDict[str, tuple[float, asyncio.Task[Any]]] = OrderedDict()

    def start(self, operation: Coroutine[Any, Any, Any]) -> str:
        """Run `operation` in the background; returns its ticket."""
        self._prune()
        ticket = secrets.token_hex(8)
        task = asyncio.get_running_loop().create_task(operation, name=f"ticket-{ticket}")
        task.add_done_callback(lambda done: done.cancelled() or done.exception())
        self._tasks[ticket] = (time.monotonic(), task)
        return ticket

    def outcome(self, ticket: str) -> dict[str, Any] | None:
        """{"state": "pending"}, {"state": "done", "result": ...} or {"state": "failed",
        "error": kind, "reason": text}; None for an unknown or expired ticket."""
        entry = self._tasks.get(ticket)
        if entry is None:
            return None
        task = entry[1]
        if not task.done():
            return {"state": "pending"}
        if task.cancelled():
            return {"state": "failed", "error": "cancelled", "reason": "the node is stopping"}
        error = task.exception()
        if error is None:
            return {"state": "done", "result": task.result()}
        if isinstance(error, ClusterUnavailable):
            return {"state": "failed", "error": error.kind, "reason": error.reason}
        if isinstance(error, OutcomeUnknown):
            return {"state": "failed", "error": "unknown", "reason": str(error)}
        if isinstance(error, ClusterError | ValueError | TypeError):
            return {"state": "failed", "error": "rejected", "reason": str(error)}
        return {"state": "failed", "error": "internal", "reason": repr(error)}

    def cancel_all(self) -> None:
        for _, task in self._tasks.values():
            task.cancel()

    def _prune(self) -> None:
        now = time.monotonic()
        while self._tasks:
            ticket, (started, task) = next(iter(self._tasks.items()))
            expired = task.done() and now - started > KEEP_SECONDS
            if not expired and len(self._tasks) < MAX_TICKETS:
                break
            del self._tasks[ticket]
