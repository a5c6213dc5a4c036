"""The classic queue: FIFO with requeue to the original position, consumer priorities, round-robin,
and for durable queues a store on disk with a bounded window of bodies in memory."""

from __future__ import annotations

import heapq
from collections import deque
from typing import Any, Callable, Protocol

from ..message import Message
from ..store import QueueStore
from ..store.record import Location
from .consumer import Consumer
from .entry import QueueEntry

# Bodies a queue keeps in memory at most (RabbitMQ's classic queues keep 2048); the rest wait on
# disk and are read back in batches of half a window ahead of consumers.
DEFAULT_WINDOW = 2048


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
        store: QueueStore | None = None,
        window: int = DEFAULT_WINDOW,
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
        self.store = store
        self.window = window
        # Messages that are only on disk: they follow every message held in memory.
        self._disk_count = store.message_count if store is not None else 0
        # The last stored message held in memory: paging reads what follows it.
        self._cursor: Location | None = None
        self._next_seq = store.next_seq if store is not None else 1
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
        return len(self._ready) + len(self._returned) + self._disk_count

    @property
    def in_memory_count(self) -> int:
        return len(self._ready) + len(self._returned)

    @property
    def consumer_count(self) -> int:
        return len(self._consumers)

    @property
    def consumers(self) -> list[Consumer]:
        return list(self._consumers)

    # --- publishing -------------------------------------------------------------------------

    def publish(self, message: Message) -> bool:
        """Enqueue a message; True when it went to disk and a confirm must wait for the fsync."""
        self.published_total += 1
        seq = self._next_seq
        self._next_seq = seq + 1
        store = self.store
        persistent = store is not None and message.persistent
        if store is not None and (self._disk_count or len(self._ready) >= self.window):
            # Past the window: the message lives on disk only until consumers get near it.
            store.append(
                seq, message.exchange, message.routing_key, message.header, message.stored_body,
                persistent=persistent,
            )
            self._disk_count += 1
            return persistent
        entry = QueueEntry(seq, message)
        if not self._ready and not self._returned and self._consumers:
            consumer = self._pick_consumer()
            if consumer is not None:
                if persistent and not consumer.no_ack:
                    self._store_in_memory_entry(entry)
                self._deliver(consumer, entry)
                return persistent and not consumer.no_ack
        if persistent:
            self._store_in_memory_entry(entry)
        self._ready.append(entry)
        backlog = len(self._ready)
        # Checked on every 64th message only: the check walks the consumers.
        if backlog > FLOW_HIGH and not backlog & 63 and self._consumers and not self.flow_blocked:
            self.flow_blocked = any(c.sink.write_blocked() for c in self._consumers)
        return persistent

    def _store_in_memory_entry(self, entry: QueueEntry) -> None:
        message = entry.message
        assert self.store is not None
        self._cursor = self.store.append(
            entry.seq, message.exchange, message.routing_key, message.header, message.stored_body
        )
        entry.stored = True

    def _page_in(self) -> None:
        """Read the next half window of messages from disk."""
        assert self.store is not None
        batch = self.store.read_messages(self._cursor, max(1, self.window // 2))
        ready = self._ready
        for stored in batch.messages:
            message = Message(stored.exchange, stored.routing_key, stored.header_payload, stored.body)
            entry = QueueEntry(stored.seq, message, stored.redelivered)
            entry.stored = True
            ready.append(entry)
        read = len(batch.messages) + len(batch.dropped)
        # Nothing more on disk although we counted some: trust the store rather than spin.
        self._disk_count = max(0, self._disk_count - read) if read else 0
        self._cursor = batch.cursor

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
        # Requeued entries always precede what is still on disk, so disk is read only when
        # nothing in memory is left to deliver.
        if returned and (not ready or returned[0].seq < ready[0].seq):
            return heapq.heappop(returned)
        if not ready and self._disk_count:
            self._page_in()
        if ready:
            return ready.popleft()
        return None

    def _deliver(self, consumer: Consumer, entry: QueueEntry) -> None:
        self.delivered_total += 1
        if consumer.no_ack:
            if entry.stored:
                self.store.ack(entry.seq)  # type: ignore[union-attr]
        else:
            self.unacked += 1
            consumer.in_flight += 1
            if entry.stored:
                self.store.mark_delivered(entry.seq)  # type: ignore[union-attr]
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
            if no_ack:
                if entry.stored:
                    self.store.ack(entry.seq)  # type: ignore[union-attr]
            else:
                self.unacked += 1
                if entry.stored:
                    self.store.mark_delivered(entry.seq)  # type: ignore[union-attr]
        return entry

    def settle(self, entry: QueueEntry) -> None:
        """A delivered message acknowledged (or rejected without requeue): it is gone."""
        self.unacked -= 1
        self.acked_total += 1
        if entry.stored and self.store is not None:
            self.store.ack(entry.seq)

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
        store = self.store
        if store is not None:
            if self.unacked == 0:
                store.purge()
                self._cursor = None
            else:
                # Unacknowledged messages stay in the store: remove the ready ones one by one.
                while self._ready or self._returned or self._disk_count:
                    entry = self._pop()
                    if entry is None:
                        break
                    if entry.stored:
                        store.ack(entry.seq)
            self._disk_count = 0
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
        self._disk_count = 0
        if self.store is not None:
            self.store.delete()
            self.store = None
        self._release_publishers()
        return count

    def _notify_decorators(self) -> None:
        for decorator in self.decorators:
            decorator.consumers_changed(self)
