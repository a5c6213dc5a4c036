"""One channel's transaction (tx.select): what it publishes and settles waits for tx.commit, whose
commit-ok waits for the disk and for the home nodes of the queues it published to."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .message import Message
    from .queues.queue_type import QueueRef

# A publish held until commit: the message, the queues it was routed to, and `mandatory`.
HeldPublish = tuple["Message", list["QueueRef"], bool]
# A settlement held until commit: "ack" or "nack", the delivery tag, `multiple` and `requeue`.
HeldSettlement = tuple[str, int, bool, bool]
# Makes `then` run once what was written so far is on disk, with the error if it is not.
WhenDurable = Callable[[Callable[[BaseException | None], None]], None]


class Transaction:
    """The held publishes and settlements of a transactional channel, and its commit's waits.

    `committed` hears how a commit ended: None for commit-ok, else why it failed."""

    def __init__(self, committed: Callable[[str | None], None]) -> None:
        self.publishes: list[HeldPublish] = []
        self.settlements: list[HeldSettlement] = []
        self._committed = committed
        self._waits = 0  # what the committing transaction still waits for
        self._remote = 0  # its publishes not yet taken by their home nodes
        self._lost = False  # one of them was lost with the link to its home node

    def hold(self, kind: str, tag: int, multiple: bool, requeue: bool) -> None:
        """basic.ack ("ack"), or basic.nack or basic.reject ("nack"), applied at commit."""
        self.settlements.append((kind, tag, multiple, requeue))

    def begin_commit(self) -> tuple[list[HeldPublish], list[HeldSettlement]]:
        """What the commit applies now; the next transaction starts empty."""
        publishes, self.publishes = self.publishes, []
        settlements, self.settlements = self.settlements, []
        self._remote, self._lost = 0, False
        return publishes, settlements

    def expect_remote(self) -> None:
        """A publish of the commit went to another node, which will say when it took it."""
        self._remote += 1

    def remote_taken(self, taken: bool) -> None:
        self._remote -= 1
        self._lost = self._lost or not taken
        if not self._remote:
            self._step()

    def end_commit(self, when_durable: WhenDurable | None) -> None:
        """Everything of the commit was handed to its queues; `when_durable` when some of it
        must reach the disk first."""
        self._waits = 1
        if self._remote:
            self._waits += 1
        if when_durable is not None:
            self._waits += 1
            when_durable(self._synced)
        self._step()

    def rollback(self) -> None:
        self.publishes.clear()
        self.settlements.clear()

    def _synced(self, error: BaseException | None) -> None:
        if error is not None:
            self._fail("could not write the transaction to disk")
            return
        self._step()

    def _step(self) -> None:
        """One of what the commit waits for is done; commit-ok once all are."""
        self._waits -= 1
        if self._waits:
            return
        if self._lost:
            self._fail("the transaction could not reach the home node of a queue")
            return
        self._committed(None)

    def _fail(self, text: str) -> None:
        self._waits = -1  # nothing more of this commit counts
        self._committed(text)
