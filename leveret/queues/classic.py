"""The classic queue: FIFO (or by priority) with requeue to the original position, consumer
priorities and round-robin, TTLs, length limits, dead-lettering, and for durable queues a store on
disk with a bounded window of bodies in memory; and its consumers."""

from __future__ import annotations

import heapq
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from ..amqp.frames import shortstr
from ..message import Message
from ..store import QueueStore
from ..store.record import Location
from .entry import QueueEntry
from .ready import FifoReady, PriorityReady
from .settings import QueueSettings, resolve

# Bodies a queue keeps in memory at most (RabbitMQ's classic queues keep 2048); the rest wait on
# disk and are read back in batches of half a window ahead of consumers.
DEFAULT_WINDOW = 2048

# Flow control: when this many ready messages wait behind consumers whose sockets are full, the
# queue's publishers stop being read until the backlog is down to FLOW_LOW (RabbitMQ's credit
# flow plays this part there). Queues without consumers are never throttled.
FLOW_HIGH = 1000
FLOW_LOW = 250


class Confirming(Protocol):
    """Who publishes into a queue and confirms its publishes: told when one waits for the disk
    or is refused, by the sequence number given with it."""

    def stored(self, seq: int) -> None:
        """Written to disk: confirmed once the group commit has fsynced it."""
        ...

    def refused(self, seq: int) -> None:
        """Refused by the length limit: the publisher gets a nack."""
        ...


class Throttled(Protocol):
    """A publisher a queue can pause and release."""

    def release_throttle(self, queue: ClassicQueue) -> None: ...


class QueueDecorator(Protocol):
    """Told when the queue's demand may have changed (federation pulls only on demand)."""

    def demand_may_have_changed(self, queue: ClassicQueue) -> None: ...


class Timer(Protocol):
    def cancel(self) -> None: ...


class Timers(Protocol):
    """The event loop's call_later, so that the queue itself does no IO."""

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer: ...


DeadLetterer = Callable[["ClassicQueue", Message, str], None]


class DeliverySink(Protocol):
    """The channel side of a consumer: whether it can take more, and taking a message."""

    def can_deliver(self) -> bool: ...

    def write_blocked(self) -> bool: ...

    def framing(self) -> tuple[int, int]:
        """The channel number and frame_max its deliveries are framed with (a remote queue's
        home node frames them so)."""
        ...

    def deliver(self, consumer: Consumer, queue: ClassicQueue, entry: QueueEntry) -> None: ...

    def room(self, wanted: int) -> int:
        """How many of `wanted` more deliveries it takes now (can_deliver before each)."""
        ...

    def deliver_all(
        self, consumer: Consumer, queue: ClassicQueue, entries: Sequence[QueueEntry]
    ) -> None:
        """`deliver` for each of `entries` in turn (a batch from a remote queue's home node)."""
        ...

    def consumer_cancelled_by_node(self, consumer: Consumer) -> None: ...


class Consumer:
    """A consumer of a queue: its tag, its channel's side and its prefetch window."""

    __slots__ = (
        "arguments",
        "exclusive",
        "in_flight",
        "no_ack",
        "prefetch",
        "priority",
        "queue",
        "sink",
        "tag",
        "tag_bytes",
    )

    def __init__(
        self,
        tag: str,
        sink: DeliverySink,
        queue: ClassicQueue,
        *,
        no_ack: bool,
        exclusive: bool,
        priority: int,
        prefetch: int,
        arguments: dict[str, Any],
    ) -> None:
        self.tag = tag
        self.tag_bytes = shortstr(tag)
        self.sink = sink
        self.queue = queue
        self.no_ack = no_ack
        self.exclusive = exclusive
        self.priority = priority
        self.prefetch = prefetch  # 0 means no per-consumer limit
        self.in_flight = 0
        self.arguments = arguments

    def has_capacity(self) -> bool:
        if self.prefetch and self.in_flight >= self.prefetch and not self.no_ack:
            return False
        return self.sink.can_deliver()

    def room(self, wanted: int) -> int:
        """How many of `wanted` more deliveries it may take now: has_capacity before each."""
        if self.no_ack:  # (its deliveries count against no prefetch)
            return wanted if self.sink.can_deliver() else 0
        if self.prefetch:
            wanted = min(wanted, self.prefetch - self.in_flight)
        return self.sink.room(wanted) if wanted > 0 else 0

    @property
    def active(self) -> bool:
        """Not blocked by its prefetch limit: what demand-driven federation looks at."""
        return not self.prefetch or self.no_ack or self.in_flight < self.prefetch


class ClassicQueue:
    """Ready messages, consumers, and the dispatch between them."""

    stream = False  # a StreamQueue (stream.py) says True

    def __init__(
        self,
        name: str,
        vhost: str,
        *,
        durable: bool = False,
        exclusive_owner: Any = None,
        auto_delete: bool = False,
        arguments: dict[str, Any] | None = None,
        store: QueueStore | None = None,
        window: int = DEFAULT_WINDOW,
        timers: Timers | None = None,
        clock: Callable[[], float] = time.monotonic,
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
        self.deleted_message_count = 0  # the ready messages it held when deleted
        self.unacked = 0
        # The body bytes of those, and the persistent ones among them (see ready_persistent).
        self.unacked_bytes = 0
        self.unacked_persistent = 0
        self.unacked_persistent_bytes = 0
        self.had_consumers = False
        self.decorators: list[QueueDecorator] = []
        # Called when an auto-delete queue loses its last consumer, or an x-expires queue expires.
        self.on_unused: Callable[[ClassicQueue], None] | None = None
        self.dead_letterer: DeadLetterer | None = None
        self.settings = resolve(self.arguments)
        self.policy: str | None = None
        self.operator_policy: str | None = None
        max_priority = self.arguments.get("x-max-priority")
        self.max_priority = (
            max_priority if isinstance(max_priority, int) and max_priority > 0 else 0
        )
        self._ready: FifoReady | PriorityReady = (
            PriorityReady(self.max_priority) if self.max_priority else FifoReady()
        )
        self._returned: list[QueueEntry] = []  # requeued entries, a heap in delivery order
        self.ready_bytes = 0  # body bytes of ready messages, in memory or on disk
        # Of those, the persistent ones (delivery_mode 2) and their body bytes, for management.
        # Counted as messages come and go: a reading that walked the entries held a node's loop
        # for half a second every 5 s while a queue of a million messages moved.
        self.ready_persistent = 0
        self.ready_persistent_bytes = 0
        self.store = store
        # Priority queues keep their messages in memory: paging would break priority order.
        self.window = window if not self.max_priority else 1 << 62
        # Messages that are only on disk: they follow every message held in memory.
        self._disk_count = store.message_count if store is not None else 0
        if store is not None:
            # (only persistent messages outlive a restart)
            self.ready_bytes = self.ready_persistent_bytes = store.recovered_body_bytes
            self.ready_persistent = store.message_count
        # The last stored message held in memory: paging reads what follows it.
        self._cursor: Location | None = None
        self._next_seq = store.next_seq if store is not None else 1
        # Consumer groups by priority, highest first; each deque rotates for round-robin.
        self._groups: list[tuple[int, deque[Consumer]]] = []
        self._consumers: list[Consumer] = []  # registration order (single active consumer)
        # With single active consumer, a cancelled active consumer keeps the queue until its
        # unacknowledged messages are settled, as in RabbitMQ 3.10: its successor then gets the
        # requeued messages first.
        self._sac_holder: Consumer | None = None
        self._dispatching = False
        self.flow_blocked = False
        self.congested = False
        self.throttled: set[Throttled] = set()
        self._timers = timers
        self._clock = clock
        self._ttl_timer: Timer | None = None
        self._ttl_due = 0.0
        self._expiry_timer: Timer | None = None
        self._last_used = clock()
        # Totals since the queue was created, for management rates and metrics.
        self.published_total = 0
        self.delivered_total = 0
        self.acked_total = 0
        self.redelivered_total = 0
        self.dead_lettered_total = 0
        self._schedule_queue_expiry()

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

    # --- settings -----------------------------------------------------------------------------

    def apply_settings(self, settings: QueueSettings) -> None:
        """New effective settings (a policy changed): enforce them on what is queued now."""
        self.settings = settings
        self._enforce_length_limit()
        self._drop_expired()
        self._schedule_queue_expiry()

    def touch(self) -> None:
        """The queue was used (declared, polled, consumed from): restart its x-expires clock."""
        self._last_used = self._clock()
        if self.settings.expires is not None and not self._consumers:
            self._schedule_queue_expiry()

    # --- publishing -------------------------------------------------------------------------

    def deliver(self, message: Message, publisher: Confirming | None = None, seq: int = 0) -> None:
        """Enqueue a message; `publisher` hears if its confirm `seq` waits for the disk, or is
        refused (it is confirmed at once otherwise)."""
        self._enqueue(message, publisher, seq)
        if self.decorators:
            self._notify_decorators()

    def _enqueue(self, message: Message, publisher: Confirming | None, seq: int) -> None:
        self.published_total += 1
        settings = self.settings
        size = len(message.body)
        if settings.has_limits and settings.overflow != "drop-head" and self._would_overflow(size):
            if settings.overflow == "reject-publish-dlx":
                self._dead_letter(message, "maxlen")
            if publisher is not None:
                publisher.refused(seq)
            return
        number = self._next_seq
        self._next_seq = number + 1
        store = self.store
        persistent = store is not None and message.persistent
        if store is not None and (self._disk_count or len(self._ready) >= self.window):
            # Past the window: the message lives on disk only until consumers get near it.
            store.append(
                number,
                message.exchange,
                message.routing_key,
                message.header,
                message.stored_body,
                persistent=persistent,
            )
            self._disk_count += 1
            self.ready_bytes += size
            if persistent:
                self.ready_persistent += 1
                self.ready_persistent_bytes += size
            self._enforce_length_limit()
            if persistent and publisher is not None:
                publisher.stored(seq)
            return
        entry = QueueEntry(number, message)
        if self.max_priority or settings.message_ttl is not None or message.has_flags:
            self._classify(entry)
        if not self._ready and not self._returned and self._consumers:
            consumer = self._pick_consumer()
            if consumer is not None:
                if persistent and not consumer.no_ack:
                    self._store_in_memory_entry(entry)
                    if publisher is not None:
                        publisher.stored(seq)
                self._deliver(consumer, entry)
                return
        if persistent:
            self._store_in_memory_entry(entry)
            if publisher is not None:
                publisher.stored(seq)
        self._append_ready(entry)
        if settings.has_limits:
            self._enforce_length_limit()
        if entry.expires_at:
            self._drop_expired()
        backlog = len(self._ready)
        if backlog > FLOW_HIGH and self._consumers:
            # Consumers are falling behind: publishers get smaller turns on a busy node.
            self.congested = True
            # Checked on every 64th message only: the check walks the consumers.
            if not backlog & 63 and not self.flow_blocked:
                self.flow_blocked = any(c.sink.write_blocked() for c in self._consumers)

    def _classify(self, entry: QueueEntry) -> None:
        """Priority (clamped to the queue's maximum) and expiry time of a new entry."""
        message = entry.message
        properties = message.properties if message.has_flags else None
        if self.max_priority and properties is not None and properties.priority:
            entry.priority = min(properties.priority, self.max_priority)
        ttl = self.settings.message_ttl
        expiration = (
            message_expiration(message)
            if properties is not None and properties.expiration
            else None
        )
        if expiration is not None:
            ttl = expiration if ttl is None else min(ttl, expiration)
        if ttl is not None:
            entry.expires_at = self._clock() + ttl / 1000.0

    def _append_ready(self, entry: QueueEntry) -> None:
        self._ready.append(entry)
        self._count_ready(entry.message, 1)

    def _count_ready(self, message: Message, sign: int) -> None:
        """A message joined (1) or left (-1) the ready ones: their bytes and persistence."""
        size = len(message.body)
        self.ready_bytes += sign * size
        if message.persistent:
            self.ready_persistent += sign
            self.ready_persistent_bytes += sign * size

    def _count_unacked(self, message: Message, sign: int) -> None:
        """The same for the messages delivered and not yet settled."""
        size = len(message.body)
        self.unacked_bytes += sign * size
        if message.persistent:
            self.unacked_persistent += sign
            self.unacked_persistent_bytes += sign * size

    def _would_overflow(self, size: int) -> bool:
        settings = self.settings
        if settings.max_length is not None and self.message_count >= settings.max_length:
            return True
        return (
            settings.max_length_bytes is not None
            and self.ready_bytes + size > settings.max_length_bytes
        )

    def _over_limit(self) -> bool:
        settings = self.settings
        if settings.max_length is not None and self.message_count > settings.max_length:
            return True
        return (
            settings.max_length_bytes is not None and self.ready_bytes > settings.max_length_bytes
        )

    def _enforce_length_limit(self) -> None:
        """drop-head: the oldest ready messages go (dead-lettered as maxlen) until within limits."""
        if not self.settings.has_limits:
            return
        while self._over_limit():
            entry = self._take()
            if entry is None:
                break
            self._discard(entry, "maxlen")

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
            message = Message(
                stored.exchange, stored.routing_key, stored.header_payload, stored.body
            )
            entry = QueueEntry(stored.seq, message, stored.redelivered)
            entry.stored = True
            if self.settings.message_ttl is not None or message.has_flags:
                self._classify(entry)  # expiry counts from when the message is read back
            ready.append(entry)
        read = len(batch.messages) + len(batch.dropped)
        # Nothing more on disk although we counted some: trust the store rather than spin.
        self._disk_count = max(0, self._disk_count - read) if read else 0
        self._cursor = batch.cursor

    # --- consuming --------------------------------------------------------------------------

    def add_consumer(self, consumer: Consumer) -> None:
        self._consumers.append(consumer)
        self.had_consumers = True
        self._cancel_queue_expiry()
        for priority, group in self._groups:
            if priority == consumer.priority:
                group.append(consumer)
                break
        else:
            self._groups.append((consumer.priority, deque([consumer])))
            self._groups.sort(key=lambda item: -item[0])
        self.dispatch()  # tells the decorators

    def remove_consumer(self, consumer: Consumer) -> None:
        if consumer not in self._consumers:
            return
        if self.single_active_consumer and self._consumers[0] is consumer and consumer.in_flight:
            self._sac_holder = consumer
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
            self.touch()
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
            holder = self._sac_holder
            if holder is not None:
                if holder.in_flight:
                    return None
                self._sac_holder = None
            consumer = self._consumers[0] if self._consumers else None
            return consumer if consumer is not None and consumer.has_capacity() else None
        for _, group in self._groups:
            for _ in range(len(group)):
                consumer = group[0]
                group.rotate(-1)
                if consumer.has_capacity():
                    return consumer
        return None

    def _take(self) -> QueueEntry | None:
        """The next entry in delivery order, expired or not."""
        returned = self._returned
        ready = self._ready
        # Requeued entries always precede what is still on disk, so disk is read only when
        # nothing in memory is left to deliver.
        if returned and (not ready or returned[0] < ready.head()):
            entry = heapq.heappop(returned)
        else:
            if not ready and self._disk_count:
                self._page_in()
            if not ready:
                return None
            entry = ready.popleft()
        self._count_ready(entry.message, -1)
        return entry

    def _pop(self) -> QueueEntry | None:
        """The next entry to deliver; expired ones met at the head are dropped on the way."""
        while True:
            entry = self._take()
            if entry is None or not entry.expires_at or entry.expires_at > self._clock():
                return entry
            self._discard(entry, "expired")

    def _deliver(self, consumer: Consumer, entry: QueueEntry) -> None:
        self.delivered_total += 1
        if consumer.no_ack:
            if entry.stored:
                self.store.ack(entry.seq)  # type: ignore[union-attr]
        else:
            self.unacked += 1
            self._count_unacked(entry.message, 1)
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
            while self._ready or self._returned or self._disk_count:
                consumer = self._pick_consumer()
                if consumer is None:
                    break
                entry = self._pop()
                if entry is None:
                    break
                self._deliver(consumer, entry)
        finally:
            self._dispatching = False
        if self.decorators:
            self._notify_decorators()  # acks and new consumers pass here
        if self.message_count <= FLOW_LOW:
            self.congested = False
            if self.flow_blocked:
                self._release_publishers()

    def _release_publishers(self) -> None:
        self.flow_blocked = False
        throttled, self.throttled = self.throttled, set()
        for publisher in throttled:
            publisher.release_throttle(self)

    # --- basic.get, acks, requeues ------------------------------------------------------------

    def get(self, no_ack: bool) -> QueueEntry | None:
        self.touch()
        entry = self._pop()
        if entry is not None and self.decorators:
            self._notify_decorators()
        if entry is not None:
            self.delivered_total += 1
            if no_ack:
                if entry.stored:
                    self.store.ack(entry.seq)  # type: ignore[union-attr]
            else:
                self.unacked += 1
                self._count_unacked(entry.message, 1)
                if entry.stored:
                    self.store.mark_delivered(entry.seq)  # type: ignore[union-attr]
        return entry

    def settle(self, entry: QueueEntry) -> None:
        """A delivered message acknowledged: it is gone."""
        self.unacked -= 1
        self._count_unacked(entry.message, -1)
        self.acked_total += 1
        if entry.stored and self.store is not None:
            self.store.ack(entry.seq)

    def settle_all(self, entries: list[QueueEntry]) -> None:
        for entry in entries:
            self.settle(entry)

    def reject(self, entry: QueueEntry) -> None:
        """A delivered message rejected without requeue: gone, or dead-lettered as rejected."""
        self.unacked -= 1
        self._count_unacked(entry.message, -1)
        self._discard(entry, "rejected")

    def _discard(self, entry: QueueEntry, reason: str) -> None:
        if entry.stored and self.store is not None:
            self.store.ack(entry.seq)
        self._dead_letter(entry.message, reason)

    def _dead_letter(self, message: Message, reason: str) -> None:
        if self.settings.dead_letter_exchange is not None and self.dead_letterer is not None:
            self.dead_lettered_total += 1
            self.dead_letterer(self, message, reason)

    def requeue(self, entries: list[QueueEntry]) -> None:
        """Unacknowledged messages back to their original position, marked redelivered."""
        returned = self._returned
        self.redelivered_total += len(entries)
        for entry in entries:
            entry.redelivered = True
            heapq.heappush(returned, entry)
            self._count_ready(entry.message, 1)
            self._count_unacked(entry.message, -1)
        self.unacked -= len(entries)
        if not self.deleted:
            self.dispatch()
            self._drop_expired()

    def purge(self) -> int:
        count = self.message_count
        store = self.store
        if store is not None:
            if self.unacked == 0:
                store.purge()
                self._cursor = None
            else:
                # Unacknowledged messages stay in the store: remove the ready ones one by one.
                while True:
                    entry = self._take()
                    if entry is None:
                        break
                    if entry.stored:
                        store.ack(entry.seq)
            self._disk_count = 0
        self._ready.clear()
        self._returned.clear()
        self.ready_bytes = self.ready_persistent = self.ready_persistent_bytes = 0
        if self.flow_blocked:
            self._release_publishers()
        if self.decorators:
            self._notify_decorators()
        return count

    def delete(self) -> int:
        """Mark deleted, cancel consumers; returns the ready message count."""
        count = self.message_count
        self.deleted = True
        self.deleted_message_count = count
        consumers, self._consumers, self._groups = self._consumers, [], []
        for consumer in consumers:
            consumer.sink.consumer_cancelled_by_node(consumer)
        self._ready.clear()
        self._returned.clear()
        self._disk_count = 0
        self.ready_bytes = self.ready_persistent = self.ready_persistent_bytes = 0
        for timer in (self._ttl_timer, self._expiry_timer):
            if timer is not None:
                timer.cancel()
        if self.store is not None:
            self.store.delete()
            self.store = None
        self._release_publishers()
        return count

    # --- expiry -------------------------------------------------------------------------------

    def _drop_expired(self) -> None:
        """Expired messages at the head go now (RabbitMQ expires only at the head), and a timer
        is set for the next head that will expire."""
        now = self._clock()
        while True:
            head = self._head()
            if head is None or not head.expires_at:
                return
            if head.expires_at > now:
                self._schedule_ttl(head.expires_at)
                return
            entry = self._take()
            assert entry is head
            self._discard(entry, "expired")

    def _head(self) -> QueueEntry | None:
        returned, ready = self._returned, self._ready
        if returned and (not ready or returned[0] < ready.head()):
            return returned[0]
        return ready.head() if ready else None

    def _schedule_ttl(self, due: float) -> None:
        if self._timers is None or (self._ttl_timer is not None and self._ttl_due <= due):
            return
        if self._ttl_timer is not None:
            self._ttl_timer.cancel()
        self._ttl_due = due
        self._ttl_timer = self._timers.call_later(max(0.0, due - self._clock()), self._ttl_fired)

    def _ttl_fired(self) -> None:
        self._ttl_timer = None
        if not self.deleted:
            self._drop_expired()

    def _schedule_queue_expiry(self) -> None:
        expires = self.settings.expires
        if self._timers is None or expires is None or self._consumers or self.deleted:
            return
        self._cancel_queue_expiry()
        due = self._last_used + expires / 1000.0
        self._expiry_timer = self._timers.call_later(
            max(0.0, due - self._clock()), self._expiry_fired
        )

    def _cancel_queue_expiry(self) -> None:
        if self._expiry_timer is not None:
            self._expiry_timer.cancel()
            self._expiry_timer = None

    def _expiry_fired(self) -> None:
        self._expiry_timer = None
        expires = self.settings.expires
        if self.deleted or expires is None or self._consumers:
            return
        if self._clock() - self._last_used >= expires / 1000.0 - 1e-3:
            if self.on_unused is not None:
                self.on_unused(self)
        else:
            self._schedule_queue_expiry()

    def _notify_decorators(self) -> None:
        for decorator in self.decorators:
            decorator.demand_may_have_changed(self)

    def has_willing_consumer(self) -> bool:
        """Some consumer of priority 0 or more, blocked by its prefetch or not (read on every
        publish and ack while a federation link consumes: no copy of the list)."""
        return any(consumer.priority >= 0 for consumer in self._consumers)

    def has_demand(self) -> bool:
        """No message is ready and some consumer of priority 0 or more can take one: what a
        federation link waits for before it pulls from upstream (RabbitMQ's rule)."""
        if self._ready or self._returned or self._disk_count:
            return False
        return any(c.priority >= 0 and c.active for c in self._consumers)


def message_expiration(message: Message) -> int | None:
    """The per-message TTL in milliseconds, from the expiration property (validated at publish)."""
    expiration = message.properties.expiration
    if expiration is None:
        return None
    try:
        return int(expiration)
    except ValueError:
        return None
