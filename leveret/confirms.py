"""Publisher-confirm bookkeeping of one channel: which publishes its queues still have to confirm.

Modelled on RabbitMQ's rabbit_confirms, with two kinds of confirmation. A queue that confirms on
its own (one homed on another node) is expected per sequence number and confirms it later; local
durable queues confirm whole read batches at once, when the group commit has fsynced them, so that
the common path keeps no per-message state. Confirms go out in order: `settle()` answers the runs
now confirmed as `multiple` acks, with each refused publish nacked alone.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

# (ack, sequence number, multiple): one basic.ack (ack True) or basic.nack to send.
Settlement = tuple[bool, int, bool]

_NOTHING: tuple[Settlement, ...] = ()


class Confirms:
    """Sequence numbers of one channel's publishes in confirm mode, and their confirmations."""

    __slots__ = ("_durable", "_holds", "_order", "_rejected", "_waiting", "published", "settled")

    def __init__(self) -> None:
        self.published = 0  # the last sequence number given out
        self.settled = 0  # every sequence number up to this one has been answered
        # Publishes waiting for queues that confirm them one by one: how many queues each waits
        # for, and their sequence numbers in order (confirms may not pass the first of them).
        self._waiting: dict[int, int] = {}
        self._order: deque[int] = deque()
        self._rejected: set[int] = set()  # to be nacked
        self._holds = 0  # durable waits (fsyncs) not finished yet
        self._durable = 0  # the last publish the finished durable waits covered

    def next_seq(self) -> int:
        self.published += 1
        return self.published

    def expect(self, seq: int) -> None:
        """One more queue will confirm `seq` later (see confirm)."""
        waiting = self._waiting
        left = waiting.get(seq)
        if left is None:
            waiting[seq] = 1
            self._order.append(seq)
        else:
            waiting[seq] = left + 1

    def confirm(self, seq: int) -> None:
        """One of the queues expected for `seq` confirmed it (or refused it, after reject)."""
        waiting = self._waiting
        left = waiting[seq] - 1
        if left:
            waiting[seq] = left
            return
        del waiting[seq]
        order = self._order
        while order and order[0] not in waiting:
            order.popleft()

    def reject(self, seq: int) -> None:
        """A queue refused `seq` (a length limit, a lost home node): the publisher gets a nack,
        although the other queues keep their copies, as in RabbitMQ."""
        self._rejected.add(seq)

    def hold(self) -> int:
        """Everything published so far waits for a durable write (the next group commit); the
        number to pass to `durable` when it is done."""
        self._holds += 1
        return self.published

    def durable(self, upto: int, ok: bool) -> None:
        """The durable wait `hold` returned `upto` for is over; not `ok`: nack what it covered."""
        self._holds -= 1
        if not ok:
            self._rejected.update(range(self._durable + 1, upto + 1))
        self._durable = upto

    def awaiting(self) -> bool:
        """Whether publishes wait for their basic.ack or basic.nack."""
        return self.settled < self.published

    def settle(self) -> Sequence[Settlement]:
        """What may be answered now, in order; each sequence number is answered once."""
        upto = self._durable if self._holds else self.published
        if self._order:
            upto = min(upto, self._order[0] - 1)
        if upto <= self.settled:
            return _NOTHING
        out: list[Settlement] = []
        if self._rejected:
            for seq in sorted(r for r in self._rejected if r <= upto):
                self._rejected.discard(seq)
                self._ack_upto(seq - 1, out)
                out.append((False, seq, False))
                self.settled = seq
        self._ack_upto(upto, out)
        return out

    def _ack_upto(self, upto: int, out: list[Settlement]) -> None:
        if upto > self.settled:
            out.append((True, upto, upto - self.settled > 1))
            self.settled = upto
