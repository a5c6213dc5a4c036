"""The stream queue (x-queue-type stream): an append-only log of messages addressed by offset,
which every consumer reads on its own from where it chose to start.

The log is a queue store (leveret/store/) whose records are never acked: message n is stored
under seq n + 1 with its append time, in the store's segment files, made durable by the same
group commit as durable queues. Retention deletes whole segments from the oldest.

A consumer is a reader with a position: messages come from the store a batch at a time, bounded
by the consumer's prefetch (acks only give credit back), and a reader that has caught up gets
new messages as the group commit makes them durable, without reading them back. Consumers never
see a message before it is on disk: after a crash, an offset a consumer saw is never given to
another message.
"""

from __future__ import annotations

import contextlib
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from ..message import Message
from ..store import QueueStore, StoreClosed
from ..store.record import Location
from .classic import ClassicQueue, Confirming, Consumer, Timer, Timers
from .entry import QueueEntry
from .stream_header import with_stream_offset
from .stream_offsets import OffsetSpec, parse_offset
from .stream_retention import resolve_retention, segments_to_drop
from .stream_rules import not_supported

# How often retention runs besides when a segment fills (an age limit passes with no appends).
RETENTION_INTERVAL = 1.0
# Most messages read from disk at once for one consumer.
_READ_BATCH = 1000


def _wall_ms() -> int:
    return int(time.time() * 1000)


class _Reader:
    """One consumer's position: the next offset it gets, and the store cursor just before it
    (None with `located`: the start of the log; not `located`: found when first needed)."""

    __slots__ = ("cursor", "located", "offset", "pending")

    def __init__(self, offset: int) -> None:
        self.offset = offset
        self.cursor: Location | None = None
        self.located = False
        self.pending: deque[QueueEntry] = deque()


class StreamQueue(ClassicQueue):
    """A durable, replayable log with ClassicQueue's face for channels, sessions and management."""

    stream = True

    def __init__(
        self,
        name: str,
        vhost: str,
        *,
        arguments: dict[str, Any],
        store: QueueStore,
        timers: Timers | None = None,
        wall_ms: Callable[[], int] = _wall_ms,
    ) -> None:
        super().__init__(name, vhost, durable=True, arguments=arguments, store=store, timers=timers)
        self.store: QueueStore = store
        self._wall_ms = wall_ms
        self._readers: dict[Consumer, _Reader] = {}
        spans = store.spans()
        self.next_offset = store.next_seq - 1
        self.first_offset = spans[0].first_seq - 1 if spans else self.next_offset
        self.log_bytes = sum(span.size for span in spans)
        self.ready_bytes = self.log_bytes
        # A stream's messages show in management by count and bytes, none as persistent.
        self.ready_persistent = self.ready_persistent_bytes = 0
        # Append time of each segment's first message: what retention by age and timestamp
        # offsets search by, without reading the log.
        self._first_timestamps: dict[int, int] = {}
        for span in spans:
            first = store.read_messages(store.segment_start(span.segment_id), 1).messages
            if first:
                self._first_timestamps[span.segment_id] = first[0].timestamp
        self._writing_segment: int | None = spans[-1].segment_id if spans else None
        self._last_location: Location | None = None  # of the last message appended since boot
        # Offsets below this one are durable: what consumers may have (what was recovered is).
        self.committed = self.next_offset
        # Appended and not yet durable, for the readers at the tail: (offset, message, where).
        self._recent: deque[tuple[int, Message, Location]] = deque()
        self._awaiting_durable = False
        self.retention = resolve_retention(arguments)
        self._retention_timer: Timer | None = None
        self._schedule_retention()

    # --- counts and settings ------------------------------------------------------------------

    @property
    def message_count(self) -> int:
        """Messages retained and durable: RabbitMQ's committed offset + 1 - first offset."""
        return max(0, self.committed - self.first_offset)

    @property
    def in_memory_count(self) -> int:
        return 0

    def apply_settings(self, settings: Any) -> None:
        """Classic settings do not apply to streams; retention comes through apply_policies."""
        self.settings = settings

    def apply_policies(
        self, policy: Mapping[str, Any] | None, operator_policy: Mapping[str, Any] | None
    ) -> None:
        self.retention = resolve_retention(self.arguments, policy, operator_policy)
        self.enforce_retention()
        self._schedule_retention()

    # --- appending ----------------------------------------------------------------------------

    def deliver(self, message: Message, publisher: Confirming | None = None, seq: int = 0) -> None:
        """Append: every message is stored and confirmed once fsynced, whatever its
        delivery mode (RabbitMQ's streams keep them all)."""
        self.published_total += 1
        offset = self.next_offset
        now = self._wall_ms()
        header = with_stream_offset(message.header, offset)
        location = self.store.append(
            offset + 1, message.exchange, message.routing_key, header, message.body, timestamp=now
        )
        self.next_offset = offset + 1
        self._last_location = location
        self.log_bytes += location.size
        self.ready_bytes = self.log_bytes
        if publisher is not None:
            publisher.stored(seq)
        if location.segment != self._writing_segment:
            self._writing_segment = location.segment
            self._first_timestamps[location.segment] = now
            if self.retention.limited:
                self.enforce_retention()
        if self._readers:
            appended = Message(message.exchange, message.routing_key, header, message.body)
            self._recent.append((offset, appended, location))
        if not self._awaiting_durable:
            # Once per turn of the event loop: one callback covers every append of the turn.
            self._awaiting_durable = True
            if self._timers is not None:
                self._timers.call_later(0, self._await_durable)
            else:
                self._await_durable()

    def _await_durable(self) -> None:
        self._awaiting_durable = False
        if self.deleted:
            return
        upto = self.next_offset
        # StoreClosed: the node is stopping, and closing the store syncs what was appended.
        with contextlib.suppress(StoreClosed):
            self.store.call_when_durable(lambda error: self._made_durable(upto, error))

    def _made_durable(self, upto: int, error: BaseException | None) -> None:
        """Offsets below `upto` are on disk: the readers may have them. (After an error the
        committer writes them again, and the next append waits for that.)"""
        if error is not None or self.deleted or upto <= self.committed:
            return
        self.committed = upto
        recent = self._recent
        while recent and recent[0][0] < upto:
            offset, message, location = recent.popleft()
            self._hand_to_tail(offset, message, location)
        self.dispatch()

    def _hand_to_tail(self, offset: int, message: Message, location: Location) -> None:
        """A message now durable, to the readers waiting for exactly it: no read back."""
        for consumer, reader in list(self._readers.items()):
            if reader.offset == offset and not reader.pending and consumer.has_capacity():
                reader.offset = offset + 1
                reader.cursor = location
                reader.located = True
                self._deliver(consumer, QueueEntry(offset + 1, message))

    # --- consuming ----------------------------------------------------------------------------

    def add_consumer(self, consumer: Consumer) -> None:
        """Start `consumer` where its x-stream-offset says (checked by its channel already)."""
        spec = parse_offset(
            consumer.arguments,
            self._wall_ms(),
            f"queue '{self.name}' in vhost '{self.vhost}'",
            (60, 20),
        )
        reader = _Reader(self.start_offset(spec))
        if reader.offset == self.next_offset:
            # At the tail: after the last message appended, or at the start of an empty log.
            if self._last_location is not None:
                reader.cursor, reader.located = self._last_location, True
            elif self.next_offset == self.first_offset:
                reader.located = True
        self._readers[consumer] = reader
        super().add_consumer(consumer)

    def remove_consumer(self, consumer: Consumer) -> None:
        self._readers.pop(consumer, None)
        super().remove_consumer(consumer)

    def start_offset(self, spec: OffsetSpec) -> int:
        """The first offset a consumer gets: never before the first retained one, and never
        past the next one to be appended."""
        first, following = self.first_offset, self.next_offset
        if spec.kind == "first":
            return first
        if spec.kind == "last":
            return self.committed - 1 if self.committed > first else following
        if spec.kind == "offset":
            return min(max(spec.value, first), following)
        if spec.kind == "timestamp":
            return self._offset_at(spec.value)
        return following

    def _offset_at(self, timestamp_ms: int) -> int:
        """The first message appended at or after `timestamp_ms` (the next one if none is)."""
        store = self.store
        spans = store.spans()
        if not spans:
            return self.next_offset
        start = spans[0]
        for span in spans[1:]:
            began = self._first_timestamps.get(span.segment_id)
            if began is None or began > timestamp_ms:
                break
            start = span
        cursor: Location | None = store.segment_start(start.segment_id)
        for _ in range(self.next_offset - self.first_offset + 1):
            batch = store.read_messages(cursor, _READ_BATCH)
            for stored in batch.messages:
                if stored.timestamp >= timestamp_ms:
                    return stored.seq - 1
            if not batch.messages:
                break
            cursor = batch.cursor
        return self.next_offset

    def dispatch(self) -> None:
        """Give each consumer what its credit allows, from where it is in the log."""
        if self._dispatching:
            return
        self._dispatching = True
        try:
            for consumer, reader in list(self._readers.items()):
                self._feed(consumer, reader)
        finally:
            self._dispatching = False

    def _feed(self, consumer: Consumer, reader: _Reader) -> None:
        pending = reader.pending
        while consumer.has_capacity() and consumer in self._readers:
            if pending:
                self._deliver(consumer, pending.popleft())
                continue
            durable = self.committed - reader.offset
            if durable <= 0:
                return
            room = max(1, consumer.prefetch - consumer.in_flight) if consumer.prefetch else 1
            if not self._read(reader, min(room, durable, _READ_BATCH)):
                return

    def _read(self, reader: _Reader, limit: int) -> bool:
        """Read up to `limit` messages after the reader's position into its pending ones."""
        store = self.store
        if not reader.located:
            if reader.offset > self.first_offset:
                # None when its segment is gone: the log's start is then the right place.
                reader.cursor = store.locate(reader.offset + 1)
            reader.located = True
        batch = store.read_messages(reader.cursor, limit)
        reader.cursor = batch.cursor
        for stored in batch.messages:
            offset = stored.seq - 1
            if offset < reader.offset:
                continue
            reader.offset = offset + 1
            message = Message(
                stored.exchange, stored.routing_key, stored.header_payload, stored.body
            )
            reader.pending.append(QueueEntry(stored.seq, message))
        return bool(reader.pending)

    def _deliver(self, consumer: Consumer, entry: QueueEntry) -> None:
        self.delivered_total += 1
        consumer.in_flight += 1
        consumer.sink.deliver(consumer, self, entry)

    # --- settling: acks give credit back, nothing leaves the log ---------------------------
    # `unacked` stays 0: as in RabbitMQ, a stream's messages are all ready, delivered or not.

    def settle(self, entry: QueueEntry) -> None:
        self.acked_total += 1

    def settle_all(self, entries: list[QueueEntry]) -> None:
        self.acked_total += len(entries)

    def reject(self, entry: QueueEntry) -> None:
        """Refused by the client's channel; only a link to another node may still pass here."""

    def requeue(self, entries: list[QueueEntry]) -> None:
        """A channel or link closed with these unacknowledged: they stay in the log."""
        if not self.deleted:
            self.dispatch()

    def get(self, no_ack: bool) -> QueueEntry | None:
        raise not_supported("basic.get", self.name, self.vhost, (60, 70))

    def purge(self) -> int:
        raise not_supported("queue.purge", self.name, self.vhost, (50, 30))

    def has_exclusive_consumer(self) -> bool:
        """Exclusive consumers do not keep others off a stream (RabbitMQ ignores the flag)."""
        return False

    def delete(self) -> int:
        """RabbitMQ answers delete-ok with 0 messages for a stream."""
        if self._retention_timer is not None:
            self._retention_timer.cancel()
            self._retention_timer = None
        self._readers.clear()
        super().delete()
        self.deleted_message_count = 0
        return 0

    # --- retention ----------------------------------------------------------------------------

    def enforce_retention(self) -> None:
        """Delete the oldest segments beyond max-length-bytes or older than max-age."""
        if self.deleted or not self.retention.limited:
            return
        store = self.store
        spans = store.spans()
        count = segments_to_drop(spans, self._first_timestamps, self.retention, self._wall_ms())
        for _ in range(count):
            dropped = store.drop_oldest_segment()
            if dropped is None:
                break
            self._first_timestamps.pop(dropped.segment_id, None)
            self.log_bytes -= dropped.size
        if count:
            remaining = store.spans()
            self.first_offset = remaining[0].first_seq - 1 if remaining else self.next_offset
            self.ready_bytes = self.log_bytes

    def _schedule_retention(self) -> None:
        if self._timers is None or self._retention_timer is not None:
            return
        if self.retention.limited and not self.deleted:
            self._retention_timer = self._timers.call_later(RETENTION_INTERVAL, self._retention_due)

    def _retention_due(self) -> None:
        self._retention_timer = None
        self.enforce_retention()
        self._schedule_retention()
