"""The classic queue: FIFO with requeue to the original position, consumer priorities, round-robin."""

from __future__ import annotations

import heapq
from collections import deque
from typing import Any, Callable, Protocol

from ..message import Message
from .consumer import Consumer
from .entry import QueueEntry


# Flow control: when this many ready messages wait behind consumers whose sockets are full, the
# queue's publishers stop being read until the backlog is down to FLOW_LOW (RabbitMQ's credit
# flow plays this part there). Queues without consumers are never throttled.
FLOW_HIGH = 1000
FLOW_LOW = 250


class Throttled(Protocol):
    """A publisher a queue can pause and release."""

    def release_throttle(self, queue: ClassicQueue) -> None: ...


class QueueDecorator(Protocol):
    """Told when a queue's consumers change (federation uses it to pull only on demand)."""

    def consumers_changed(self, queue: ClassicQueue) -> None: ...


class ClassicQueue:
    """Ready messages, consumers, and the dispatch between them. No IO."""

    def __init__(
        self,
        name: str,
        vhost: str,
        *,
        durable: bool = False,
        exclusive_owner: object | None = None,
        auto_delete: bool = False,
        arguments: dict[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.vhost = vhost
        self.durable = durable
        self.exclusive_owner = exclusive_owner
        self.auto_delete = auto_delete
        self.arguments = arguments or {}
        self.argument_types: dict[str, str] = {}
        self.single_active_consumer = self.arguments.get("x-single-active-consumer") is True
        self.deleted = False
        self.unacked = 0
        self.had_consumers = False
        self.decorators: list[QueueDecorator] = []
        # Called when an auto-delete queue loses its last consumer.
        self.on_unused: Callable[[ClassicQueue], None] | None = None
        self._ready: deque[QueueEntry] = deque()
        self._returned: list[QueueEntry] = []  # requeued entries, a heap by sequence number
        self._next_seq = 0
        # Consumer groups by priority, highest first; each deque rotates for round-robin.
        self._groups: list[tuple[int, deque[Consumer]]] = []
        self._consumers: list[Consumer] = []  # registration order (single active consumer)
        self._dispatching = False
        self.flow_blocked = False
        self.throttled: set[Throttled] = set()
        # Totals since the queue was created, for management rates and metrics.
        self.published_total = 0
        self.delivered_total = 0
        self.acked_total = 0
        self.redelivered_total = 0

    # --- counts -----------------------------------------------------------------------------

    @property
    def message_count(self) -> int:
        """Ready messages: what queue.declare-ok and basic.get-ok report."""
        return len(self._ready) + len(self._returned)

    @property
    def consumer_count(self) -> int:
        return len(self._consumers)

    @property
    def consumers(self) -> list[Consumer]:
        return list(self._consumers)

    # --- publishing -------------------------------------------------------------------------

    def publish(self, message: Message) -> None:
        self.published_total += 1
        seq = self._next_seq
        self._next_seq = seq + 1
        entry = QueueEntry(seq, message)
        if not self._ready and not self._returned and self._consumers:
            consumer = self._pick_consumer()
            if consumer is not None:
                self._deliver(consumer, entry)
                return
        self._ready.append(entry)
        backlog = len(self._ready)
        # Checked on every 64th message only: the check walks the consumers.
        if backlog > FLOW_HIGH and not backlog & 63 and self._consumers and not self.flow_blocked:
            self.flow_blocked = any(c.sink.write_blocked() for c in self._consumers)

    # --- consuming --------------------------------------------------------------------------

    def add_consumer(self, consumer: Consumer) -> None:
        self._consumers.append(consumer)
        self.had_consumers = True
        for priority, group in self._groups:
            if priority == consumer.priority:
                group.append(consumer)
                break
        else:
            self._groups.append((consumer.priority, deque([consumer])))
            self._groups.sort(key=lambda item: -item[0])
        self._notify_decorators()
        self.dispatch()

    def remove_consumer(self, consumer: Consumer) -> None:
        if consumer not in self._consumers:
            return
        self._consumers.remove(consumer)
        for index, (_, group) in enumerate(self._groups):
            if consumer in group:
                group.remove(consumer)
                if not group:
                    del self._groups[index]
                break
        self._notify_decorators()
        if not self._consumers:
            self._release_publishers()
        if not self._consumers and self.auto_delete and self.on_unused is not None:
            self.on_unused(self)
            return
        if self.single_active_consumer:
            self.dispatch()

    def has_exclusive_consumer(self) -> bool:
        return any(c.exclusive for c in self._consumers)

    def active_consumer(self) -> Consumer | None:
        """With single active consumer, the one that receives messages."""
        return self._consumers[0] if self._consumers else None

    def _pick_consumer(self) -> Consumer | None:
        if self.single_active_consumer:
            consumer = self._consumers[0] if self._consumers else None
            return consumer if consumer is not None and consumer.has_capacity() else None
        for _, group in self._groups:
            for _ in range(len(group)):
                consumer = group[0]
                group.rotate(-1)
                if consumer.has_capacity():
                    return consumer
        return None

    def _pop(self) -> QueueEntry | None:
        returned = self._returned
        ready = self._ready
        if returned and (not ready or returned[0].seq < ready[0].seq):
            return heapq.heappop(returned)
        if ready:
            return ready.popleft()
        return None

    def _deliver(self, consumer: Consumer, entry: QueueEntry) -> None:
        self.delivered_total += 1
        if not consumer.no_ack:
            self.unacked += 1
            consumer.in_flight += 1
        consumer.sink.deliver(consumer, self, entry)

    def dispatch(self) -> None:
        """Hand ready messages to consumers with capacity until one side runs out."""
        if self._dispatching:
            return  # a delivery can cause an ack that re-enters dispatch; the outer loop continues
        self._dispatching = True
        try:
            while self._ready or self._returned:
                consumer = self._pick_consumer()
                if consumer is None:
                    break
                entry = self._pop()
                assert entry is not None
                self._deliver(consumer, entry)
        finally:
            self._dispatching = False
        if self.flow_blocked and self.message_count <= FLOW_LOW:
            self._release_publishers()

    def _release_publishers(self) -> None:
        self.flow_blocked = False
        throttled, self.throttled = self.throttled, set()
        for publisher in throttled:
            publisher.release_throttle(self)

    # --- basic.get, acks, requeues ------------------------------------------------------------

    def get(self, no_ack: bool) -> QueueEntry | None:
        entry = self._pop()
        if entry is not None:
            self.delivered_total += 1
            if not no_ack:
                self.unacked += 1
        return entry

    def settle(self, count: int = 1) -> None:
        """Delivered messages acknowledged (or rejected without requeue)."""
        self.unacked -= count
        self.acked_total += count

    def requeue(self, entries: list[QueueEntry]) -> None:
        """Unacknowledged messages back to their original position, marked redelivered."""
        returned = self._returned
        self.redelivered_total += len(entries)
        for entry in entries:
            entry.redelivered = True
            heapq.heappush(returned, entry)
        self.unacked -= len(entries)
        if not self.deleted:
            self.dispatch()

    def purge(self) -> int:
        count = self.message_count
        self._ready.clear()
        self._returned.clear()
        if self.flow_blocked:
            self._release_publishers()
        return count

    def delete(self) -> int:
        """Mark deleted, cancel consumers; returns the ready message count."""
        count = self.message_count
        self.deleted = True
        consumers, self._consumers, self._groups = self._consumers, [], []
        for consumer in consumers:
            consumer.sink.consumer_cancelled_by_node(consumer)
        self._ready.clear()
        self._returned.clear()
        self._release_publishers()
        return count

    def _notify_decorators(self) -> None:
        for decorator in self.decorators:
            decorator.consumers_changed(self)
