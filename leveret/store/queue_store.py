"""The message store of one durable queue: append-only segments of message records, lazily
durable delivery and ack marks beside them, and whole segments deleted once fully acked."""

from __future__ import annotations

import bisect
import logging
from collections.abc import Iterator
from dataclasses import dataclass

from .errors import (
    BodyUnavailable,
    CorruptRecord,
    RecordNotFound,
    StoreClosed,
)
from .files import DEFAULT_FILE_SYSTEM, FileSystem
from .group_commit import DurableCallback, GroupCommitter, SyncTarget
from .queue_segment import MARKS_SUFFIX, SEGMENT_SUFFIX, QueueSegment
from .record import (
    FLAG_TRANSIENT,
    PREFIX_SIZE,
    SEQ_FIELD,
    SEQ_OFFSET,
    BodyRef,
    IndexEntry,
    Location,
    StoredMessage,
    decode_head,
    decode_message,
    encode_message,
    encode_name,
    record_timestamp,
)
from .recovery import RecoveryTally, recover_segment
from .segment import DEFAULT_SEGMENT_SIZE, FRAME_OVERHEAD, HEADER_SIZE, decode_frame, frame
from .shared_store import SharedStore

_log = logging.getLogger(__name__)

# A segment's bitmaps cost a bit per seq of its range; sparse seqs roll over early instead of
# growing them without bound (4M seqs: 1.5 MB of bitmaps at most).
_MAX_SEQ_SPAN = 1 << 22


@dataclass(frozen=True)
class QueueStoreStatistics:
    messages: int
    segments: int
    disk_bytes: int
    index_memory_bytes: int


@dataclass(frozen=True)
class SegmentSpan:
    """One segment as a stream's retention sees it: its id, its seqs and its size on disk."""

    segment_id: int
    first_seq: int
    last_seq: int
    size: int


@dataclass(frozen=True)
class ReadBatch:
    """Messages read ahead from disk, the seqs dropped because their body was unreadable (the
    queue must forget them; they are acked in the store), and where to continue next time."""

    messages: list[StoredMessage]
    dropped: list[int]
    cursor: Location | None


class QueueStore:
    """One durable queue's messages on disk; open it with QueueStore.open().

    Sequence numbers are the queue's own, increasing and best dense (gaps cost memory and
    early rollovers); after recovery continue from `next_seq`.
    Appends are buffered and handed to the group committer; acks and delivery marks are lazily
    durable (written to the OS within the loop iteration, fsynced with the next batch). Without
    a committer, call sync() to make things durable.

    The queue keeps a bounded window of messages in memory and pages the rest in with
    read_messages(after=cursor), where cursor is the location of the last message it already
    holds: the store never needs a per-message index in memory.
    """

    def __init__(
        self,
        directory: str,
        *,
        fs: FileSystem,
        shared: SharedStore | None,
        committer: GroupCommitter | None,
        segment_size: int,
        segments: list[QueueSegment],
        tally: RecoveryTally,
    ) -> None:
        self.directory = directory
        self._fs = fs
        self._shared = shared
        self._committer = committer
        self._segment_size = segment_size
        self._segments = segments
        self._firsts: list[int] = [segment.index.first_seq for segment in segments]  # type: ignore[misc]
        self._by_id = {segment.segment_id: segment for segment in segments}
        self._highest_seq = tally.highest_seq
        self.message_count = tally.live
        self.recovered_body_bytes = tally.body_bytes
        next_id = max((s.segment_id for s in segments), default=0) + 1
        for name in fs.listdir(directory):
            stem = name.split(".")[0]
            if stem.isdigit():
                next_id = max(next_id, int(stem) + 1)
        self._active = QueueSegment.create(fs, directory, next_id)
        self._closed = False

    @classmethod
    def open(
        cls,
        directory: str,
        *,
        shared: SharedStore | None = None,
        committer: GroupCommitter | None = None,
        fs: FileSystem = DEFAULT_FILE_SYSTEM,
        segment_size: int = DEFAULT_SEGMENT_SIZE,
    ) -> QueueStore:
        """Opens (creating if needed) a queue's store and recovers what is in it: checksums are
        verified, torn tails cut off, transient messages dropped; each surviving message's
        shared body is checked and counted into the shared store's references."""
        # The directory's entry is made durable by the first fsync of each new segment, in the
        # committer's thread: nothing in it needs to survive a power cut before that.
        fs.makedirs(directory, sync_entry=False)
        names = fs.listdir(directory)
        segment_ids = sorted(
            int(name[: -len(SEGMENT_SUFFIX)])
            for name in names
            if name.endswith(SEGMENT_SUFFIX) and name[: -len(SEGMENT_SUFFIX)].isdigit()
        )
        tally = RecoveryTally()
        segments: list[QueueSegment] = []
        for segment_id in segment_ids:
            segment = recover_segment(fs, directory, segment_id, shared, tally)
            if segment is not None:
                segments.append(segment)
        known = set(segment_ids)
        for name in names:
            stem = name[: -len(MARKS_SUFFIX)]
            if name.endswith(MARKS_SUFFIX) and stem.isdigit() and int(stem) not in known:
                fs.remove(f"{directory}/{name}")
        if shared is not None:
            for segment in segments:
                for file_id, count in segment.index.shared_refs.items():
                    shared.add_refs(file_id, count)
        for file_id, count in sorted(tally.missing_bodies.items()):
            _log.error(
                "queue store %s: %d message(s) dropped: their bodies were in shared store file "
                "%d, which is missing or truncated",
                directory,
                count,
                file_id,
            )
        if tally.transient_dropped or tally.torn_files or tally.live:
            _log.info(
                "queue store %s: recovered %d message(s) in %d segment(s); %d transient dropped; "
                "%d damaged file(s) repaired",
                directory,
                tally.live,
                len(segments),
                tally.transient_dropped,
                tally.torn_files,
            )
        return cls(
            directory,
            fs=fs,
            shared=shared,
            committer=committer,
            segment_size=segment_size,
            segments=segments,
            tally=tally,
        )

    @property
    def next_seq(self) -> int:
        """The lowest seq the queue may use next (1 for a new store)."""
        return 1 if self._highest_seq is None else self._highest_seq + 1

    def append(
        self,
        seq: int,
        exchange: str,
        routing_key: str,
        header_payload: bytes,
        body: bytes | BodyRef,
        *,
        persistent: bool = True,
        on_durable: DurableCallback | None = None,
        timestamp: int | None = None,
    ) -> Location:
        """Stores a message (buffered; durable with the next group commit).

        body is the body, or a BodyRef from SharedStore.share()/put() when the same large body
        goes to several queues; a large bytes body is put in the shared store here. Transient
        messages (persistent=False) are stored only so the queue can page them out of memory;
        recovery drops them.
        """
        self._check_open()
        if self._highest_seq is not None and seq <= self._highest_seq:
            raise ValueError(f"seq {seq} is not above {self._highest_seq}")
        if on_durable is not None and self._committer is None:
            raise ValueError("on_durable needs a group committer")
        if (
            self._shared is not None
            and not isinstance(body, BodyRef)
            and len(body) >= self._shared.embed_threshold
        ):
            body = self._shared.put(body)
        record = frame(
            encode_message(
                seq,
                encode_name(exchange),
                encode_name(routing_key),
                header_payload,
                body,
                persistent,
                timestamp,
            )
        )
        active = self._active
        index = active.index
        if index.records and (
            index.accounted_bytes >= self._segment_size or seq - index.first_seq >= _MAX_SEQ_SPAN  # type: ignore[operator]
        ):
            active = self._roll_over()
            index = active.index
        writer = active.writer
        assert writer is not None
        if self._committer is not None:
            offset = self._committer.write(writer, record, on_durable)
        else:
            offset = writer.append(record)
        if index.first_seq is None:
            self._segments.append(active)
            self._firsts.append(seq)
            self._by_id[active.segment_id] = active
        index.add(seq)
        index.accounted_bytes += len(record)
        if isinstance(body, BodyRef):
            index.accounted_bytes += body.size
            index.add_shared_ref(body.file_id)
            assert self._shared is not None, "a BodyRef needs the shared store it came from"
            self._shared.add_refs(body.file_id)
        self._highest_seq = seq
        self.message_count += 1
        return Location(active.segment_id, offset, len(record))

    def mark_delivered(self, seq: int) -> bool:
        """Remembers (lazily durable) that a message went to a consumer, so that after a
        restart it comes back with redelivered=true. False if seq is not a live message."""
        self._check_open()
        segment = self._segment_for(seq)
        if segment is None or not segment.index.set_delivered(seq):
            return False
        marks = segment.mark_log()
        marks.add_delivered(seq)
        self._note_dirty(marks)
        return True

    def ack(self, seq: int) -> bool:
        """Removes a message (lazily durable: a crash may bring it back, redelivered). False if
        seq is not a live message. A segment whose messages are all acked is deleted."""
        self._check_open()
        segment = self._segment_for(seq)
        if segment is None or not segment.index.set_acked(seq):
            return False
        self.message_count -= 1
        if segment.index.live == 0 and segment is not self._active:
            self._drop(segment)
        else:
            marks = segment.mark_log()
            marks.add_acked(seq)
            self._note_dirty(marks)
        return True

    def is_live(self, seq: int) -> bool:
        segment = self._segment_for(seq)
        return segment is not None and segment.index.is_live(seq)

    def read(self, location: Location) -> StoredMessage:
        """Reads one message back. RecordNotFound if its segment is gone; BodyUnavailable if the
        body cannot be read (the queue should ack it and log)."""
        self._check_open()
        segment = self._by_id.get(location.segment)
        if segment is None:
            raise RecordNotFound(f"segment {location.segment} of {self.directory} is gone")
        try:
            payload = decode_frame(segment.read(location.offset, location.size))
        except OSError as error:
            raise CorruptRecord(f"cannot read {segment.path}: {error}") from error
        return self._decode(segment, location, payload)

    def read_messages(
        self, after: Location | None, limit: int, *, max_bytes: int | None = None
    ) -> ReadBatch:
        """Up to limit live messages (bodies included) that follow `after` in queue order, or
        from the start if after is None; stops early once max_bytes of bodies are read."""
        self._check_open()
        messages: list[StoredMessage] = []
        dropped: list[int] = []
        cursor = after
        body_bytes = 0
        if limit <= 0:
            return ReadBatch(messages, dropped, cursor)
        peek_seq = SEQ_FIELD.unpack_from
        last: tuple[QueueSegment, int, int] | None = None
        for segment, offset, payload in self._records_after(after):
            last = segment, offset, len(payload)
            if len(payload) >= PREFIX_SIZE and not segment.index.is_live(
                peek_seq(payload, SEQ_OFFSET)[0]
            ):
                continue  # acked: common while paging, so decoded no further
            location = Location(segment.segment_id, offset, FRAME_OVERHEAD + len(payload))
            try:
                message = self._decode(segment, location, payload)
            except CorruptRecord as error:
                _log.error("%s: record at byte %d skipped: %s", segment.path, offset, error)
                continue
            except BodyUnavailable as error:
                seq = peek_seq(payload, SEQ_OFFSET)[0]
                _log.error("queue store %s: message %d dropped: %s", self.directory, seq, error)
                self.ack(seq)
                dropped.append(seq)
                continue
            messages.append(message)
            body_bytes += len(message.body)
            if len(messages) >= limit or (max_bytes is not None and body_bytes >= max_bytes):
                break
        if last is not None:
            segment, offset, size = last
            cursor = Location(segment.segment_id, offset, FRAME_OVERHEAD + size)
        return ReadBatch(messages, dropped, cursor)

    # --- what streams add: positions by seq, and retention by whole segments -------------------

    def spans(self) -> list[SegmentSpan]:
        """Every segment holding records, oldest first (the one being written last)."""
        return [
            SegmentSpan(s.segment_id, s.index.first_seq, s.index.last_seq, s.end)  # type: ignore[arg-type]
            for s in self._all_segments()
            if s.index.first_seq is not None
        ]

    def segment_start(self, segment_id: int) -> Location:
        """A cursor for read_messages that starts with the first record of a segment."""
        return Location(segment_id, HEADER_SIZE, 0)

    def locate(self, seq: int) -> Location | None:
        """A cursor for read_messages that starts at `seq` (or the first record after it), or
        None when no segment holds it. Scans one segment: streams look up only where a
        consumer starts."""
        self._check_open()
        segment = self._segment_for(seq)
        if segment is None:
            return None
        peek_seq = SEQ_FIELD.unpack_from
        previous = self.segment_start(segment.segment_id)
        for offset, payload in segment.frames():
            if len(payload) >= PREFIX_SIZE and peek_seq(payload, SEQ_OFFSET)[0] >= seq:
                return previous
            previous = Location(segment.segment_id, offset, FRAME_OVERHEAD + len(payload))
        return previous

    def call_when_durable(self, callback: DurableCallback) -> None:
        """Calls back once everything appended so far is fsynced (at once without a committer,
        whose caller syncs by itself)."""
        if self._committer is None:
            callback(None)
        else:
            self._committer.call_when_durable(callback)

    def drop_oldest_segment(self) -> SegmentSpan | None:
        """Deletes the oldest segment unless it is the one being written (stream retention)."""
        self._check_open()
        if not self._segments or self._segments[0] is self._active:
            return None
        segment = self._segments[0]
        span = SegmentSpan(
            segment.segment_id,
            segment.index.first_seq,  # type: ignore[arg-type]
            segment.index.last_seq,  # type: ignore[arg-type]
            segment.end,
        )
        self._drop(segment)
        return span

    def recover(self) -> Iterator[IndexEntry]:
        """Every live message in queue order, without its body, with its redelivered flag.

        Streams from disk a chunk at a time; a queue that only needs its count and its first
        window should use message_count and read_messages(None, window) instead.
        """
        self._check_open()
        for segment, offset, payload in self._records_after(None):
            location = Location(segment.segment_id, offset, FRAME_OVERHEAD + len(payload))
            try:
                head = decode_head(payload)
            except CorruptRecord:
                continue
            index = segment.index
            if index.is_live(head.seq):
                yield IndexEntry(
                    head.seq,
                    location,
                    index.is_delivered(head.seq),
                    head.body_size,
                    not head.flags & FLAG_TRANSIENT,
                )

    def purge(self) -> int:
        """Drops every message; returns how many there were."""
        self._check_open()
        count = self.message_count
        for segment in list(self._segments):
            self._drop(segment)
        if self._active.writer is not None and not self._active.dropped:
            self._active.remove()
        self._active = QueueSegment.create(self._fs, self.directory, self._active.segment_id + 1)
        self.message_count = 0
        return count

    def sync(self) -> None:
        """Writes and fsyncs everything on the calling thread (shutdown, tools, tests). With a
        committer, prefer `await committer.wait_durable()`."""
        self._check_open()
        for segment in self._all_segments():
            # A segment without records stays without a file.
            if segment.writer is not None and segment.index.records:
                segment.writer.sync_now()
            if segment.marks is not None:
                segment.marks.sync_now()

    def close(self) -> None:
        """Syncs and closes the files. With a committer, await its wait_durable() first."""
        if self._closed:
            return
        self.sync()
        for segment in self._all_segments():
            segment.close()
        self._closed = True

    def delete(self) -> None:
        """The queue was deleted: releases its shared bodies and removes its files."""
        if self._closed:
            return
        for segment in list(self._segments):
            self._drop(segment)
        if not self._active.dropped:
            self._active.remove()
        for name in self._fs.listdir(self.directory):
            if name.endswith((SEGMENT_SUFFIX, MARKS_SUFFIX)):
                self._fs.remove(f"{self.directory}/{name}")
        self._fs.remove_directory(self.directory)
        self.message_count = 0
        self._closed = True

    def statistics(self) -> QueueStoreStatistics:
        segments = self._all_segments()
        return QueueStoreStatistics(
            messages=self.message_count,
            segments=len(segments),
            disk_bytes=sum(segment.end for segment in segments),
            index_memory_bytes=sum(segment.index.memory_bytes() for segment in segments),
        )

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosed(f"queue store {self.directory} is closed")

    def _note_dirty(self, target: SyncTarget) -> None:
        if self._committer is not None:
            self._committer.note_dirty(target)

    def _all_segments(self) -> list[QueueSegment]:
        if self._segments and self._segments[-1] is self._active:
            return list(self._segments)
        return [*self._segments, self._active]

    def _segment_for(self, seq: int) -> QueueSegment | None:
        position = bisect.bisect_right(self._firsts, seq) - 1
        if position < 0:
            return None
        segment = self._segments[position]
        return segment if segment.index.covers(seq) else None

    def _roll_over(self) -> QueueSegment:
        previous = self._active
        self._active = QueueSegment.create(self._fs, self.directory, previous.segment_id + 1)
        for segment in self._segments:
            segment.retire_writer_if_durable()
        if previous.index.live == 0:
            self._drop(previous)
        return self._active

    def _drop(self, segment: QueueSegment) -> None:
        if self._shared is not None:
            for file_id, count in segment.index.shared_refs.items():
                self._shared.release(file_id, count)
        segment.remove()
        position = self._segments.index(segment)
        del self._segments[position]
        del self._firsts[position]
        del self._by_id[segment.segment_id]
        self.message_count -= segment.index.live

    def _records_after(
        self, after: Location | None
    ) -> Iterator[tuple[QueueSegment, int, memoryview]]:
        """(segment, frame offset, payload) of every record after `after`, in queue order."""
        if after is None:
            start, offset = 0, HEADER_SIZE
        else:
            segment = self._by_id.get(after.segment)
            if segment is not None:
                start, offset = self._segments.index(segment), after.offset + after.size
            else:
                ids = [s.segment_id for s in self._segments]
                start, offset = bisect.bisect_right(ids, after.segment), HEADER_SIZE
        for segment in self._segments[start:]:
            for frame_offset, payload in segment.frames(offset):
                yield segment, frame_offset, payload
            offset = HEADER_SIZE

    def _decode(
        self, segment: QueueSegment, location: Location, payload: memoryview
    ) -> StoredMessage:
        seq, flags, exchange, routing_key, header_payload, body = decode_message(payload)
        if isinstance(body, BodyRef):
            if self._shared is None:
                raise BodyUnavailable(f"{segment.path}: shared body but no shared store")
            body = self._shared.read(body)
        return StoredMessage(
            seq,
            exchange,
            routing_key,
            header_payload,
            body,
            segment.index.is_delivered(seq),
            not flags & FLAG_TRANSIENT,
            location,
            record_timestamp(payload),
        )
