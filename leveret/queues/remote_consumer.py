"""A remote queue as one channel uses it: deliveries from its home node, settled back over the link.

The channel keeps treating it as a queue: a consumer's `queue`, the queue of an unacknowledged
delivery. Deliveries the channel cannot take yet (its socket is full, a global prefetch is
reached) wait here; credit goes back to the home node only for those written out, so the home
node never has more than `CREDIT_WINDOW` of them on the way.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING

from .remote import HomeLink, Outcome

if TYPE_CHECKING:
    from .classic import Consumer
    from .entry import QueueEntry

# Looked up once: reading an Enum class's member costs about 75 ns, once per acknowledgement.
_ACK, _REJECT, _REQUEUE = Outcome.ACK, Outcome.REJECT, Outcome.REQUEUE
# Deliveries the home node may send a consumer ahead of what its channel wrote out.
CREDIT_WINDOW = 1000
_CREDIT_BATCH = CREDIT_WINDOW // 4


class RemoteQueueHandle:
    """A remote queue seen through one link session: one consumer of it, or one basic.get."""

    single_active_consumer = False  # the home node decides which consumer is active
    stream = False  # whether the queue is a stream (its client refuses nack and reject)

    def __init__(self, link: HomeLink, vhost: str, name: str) -> None:
        self.link = link
        self.vhost = vhost
        self.name = name
        # Deliveries name themselves by ids valid on one link session only.
        self.generation = link.generation
        self.consumer: Consumer | None = None
        self.consumer_id = 0  # on the link, once subscribed
        # Deliveries may come before the client heard consume-ok: they wait until then.
        self.started = False
        self.deleted = False
        self._waiting: deque[QueueEntry] = deque()
        self._written = 0  # deliveries written out since credit was last granted

    # --- deliveries from the home node --------------------------------------------------------

    def delivered(self, entries: list[QueueEntry]) -> None:
        # Those the consumer can take now go to its channel in one write; the rest wait.
        consumer = self.consumer
        if consumer is None:
            self._give_back(entries)
            return
        taken = 0
        if self.started and not self._waiting:
            taken = consumer.room(len(entries))
            if taken:
                self._deliver(consumer, entries if taken == len(entries) else entries[:taken])
        if taken < len(entries):
            self._waiting.extend(entries[taken:])

    def cancelled_by_home(self) -> None:
        """The queue is gone, or its home node: the client hears of it if it can."""
        self.deleted = True
        consumer, self.consumer = self.consumer, None
        self._waiting.clear()  # the home node requeued them, or lost them with the queue
        if consumer is not None:
            consumer.sink.consumer_cancelled_by_node(consumer)

    def start(self) -> None:
        """The client has its consume-ok: deliveries may go to it."""
        self.started = True
        self.dispatch()

    def dispatch(self) -> None:
        """The channel can take more: hand over what waits."""
        consumer = self.consumer
        waiting = self._waiting
        if not self.started or consumer is None or not waiting:
            return
        taken = consumer.room(len(waiting))
        if taken:
            self._deliver(consumer, [waiting.popleft() for _ in range(taken)])

    def _deliver(self, consumer: Consumer, entries: list[QueueEntry]) -> None:
        if not consumer.no_ack:
            consumer.in_flight += len(entries)
        consumer.sink.deliver_all(consumer, self, entries)  # type: ignore[arg-type]
        self._written += len(entries)
        if self._written >= _CREDIT_BATCH and self._current():
            self.link.grant(self.consumer_id, self._written)
            self._written = 0

    def _give_back(self, entries: Iterable[QueueEntry]) -> None:
        """Back to the queue on the home node (those delivered without acknowledgement are
        gone)."""
        seqs = [entry.seq for entry in entries if entry.seq]
        if seqs and self._current():
            self.link.settle(_REQUEUE, seqs)

    def _current(self) -> bool:
        # A link takes a new generation whenever it fails, so one that is down has left this
        # handle's behind.
        return self.link.generation == self.generation

    # --- what the channel does ----------------------------------------------------------------

    def remove_consumer(self, consumer: Consumer) -> asyncio.Future[None] | None:
        """basic.cancel, or the channel closed: stop the home node's consumer. Resolves once
        the home node has (None: at once); until then, what it sent still reaches the client."""
        if self.consumer is not consumer:
            return None
        if not self._current() or not self.consumer_id:
            # (no id yet: cancelled once the home node names it, remote_type.py)
            self._stopped()
            return None
        done = self.link.cancel(self.consumer_id)
        done.add_done_callback(lambda _: self._stopped())
        return done

    def _stopped(self) -> None:
        self.consumer = None
        waiting, self._waiting = self._waiting, deque()
        self._give_back(waiting)

    def settle(self, entry: QueueEntry) -> None:
        if self._current():
            self.link.settle(_ACK, [entry.seq])

    def settle_all(self, entries: list[QueueEntry]) -> None:
        if self._current():
            self.link.settle(_ACK, [entry.seq for entry in entries])

    def reject(self, entry: QueueEntry) -> None:
        if self._current():
            self.link.settle(_REJECT, [entry.seq])

    def requeue(self, entries: list[QueueEntry]) -> None:
        self._give_back(entries)

    def active_consumer(self) -> Consumer | None:
        return self.consumer
