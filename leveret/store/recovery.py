"""Boot-time recovery of one queue segment and its mark log: checksums verified, torn or corrupt
tails logged and cut off, transient messages and messages whose shared body is gone dropped."""

from __future__ import annotations

import logging
import os
from collections import Counter
from dataclasses import dataclass, field

from .errors import CorruptRecord
from .files import FileSystem
from .marks import MarkKind, MarkLog, decode_marks
from .queue_segment import QueueSegment, marks_file_name, segment_file_name
from .record import (
    FLAG_SHARED_BODY,
    FLAG_TRANSIENT,
    PREFIX_SIZE,
    RECORD_PREFIX,
    RECORD_VERSION,
    decode_head,
)
from .segment import FRAME_OVERHEAD, HEADER_SIZE, FileKind, ScanReport, load_file, scan_frames
from .segment_index import SegmentIndex
from .shared_store import SharedStore

_log = logging.getLogger(__name__)

Runs = list[tuple[int, int]]


@dataclass
class RecoveryTally:
    """What the recovery of a whole queue store found, for its summary log line."""

    live: int = 0
    body_bytes: int = 0
    transient_dropped: int = 0
    missing_bodies: Counter[int] = field(default_factory=Counter)
    torn_files: int = 0
    highest_seq: int | None = None


def _merged(runs: Runs) -> Runs:
    merged: Runs = []
    for first, count in sorted(runs):
        if merged and first <= merged[-1][0] + merged[-1][1]:
            last_first, last_count = merged[-1]
            merged[-1] = (last_first, max(last_count, first + count - last_first))
        else:
            merged.append((first, count))
    return merged


class _RunCursor:
    """Answers "is seq in these runs?" for increasing seqs in amortised constant time."""

    def __init__(self, runs: Runs) -> None:
        self._runs = _merged(runs)
        self._position = 0

    def contains(self, seq: int) -> bool:
        runs = self._runs
        if not runs:
            return False
        while self._position < len(runs) and sum(runs[self._position]) <= seq:
            self._position += 1
        return self._position < len(runs) and runs[self._position][0] <= seq


def _cut_tail(fs: FileSystem, fd: int, path: str, report: ScanReport, size: int) -> None:
    _log.warning(
        "%s: %s; cutting the file from %d to %d bytes", path, report.damage, size, report.valid_end
    )
    try:
        fs.truncate(fd, report.valid_end)
        fs.sync(fd)
    except OSError as error:
        # Boot goes on: segments are never appended to again, and marks written after an
        # uncut tail are at worst lost at the next boot, as lazily durable acks may be.
        _log.error("%s: cannot cut the damaged tail: %s", path, error)


def recover_marks(fs: FileSystem, path: str) -> tuple[MarkLog | None, Runs, Runs]:
    """The mark log reopened for appending, with its acked and delivered runs."""
    if not fs.exists(path):
        return None, [], []
    loaded = load_file(fs, path, FileKind.MARKS)
    if not loaded.header_ok:
        _log.warning("%s: no valid header (torn at creation); removing it", path)
        fs.close(loaded.fd)
        fs.remove(path)
        return None, [], []
    acked: Runs = []
    delivered: Runs = []
    report = ScanReport()
    for offset, payload in scan_frames(loaded.data, HEADER_SIZE, report):
        try:
            kind, runs = decode_marks(payload)
        except CorruptRecord as error:
            _log.error("%s: mark record at byte %d skipped: %s", path, offset, error)
            continue
        (acked if kind is MarkKind.ACKED else delivered).extend(runs)
    for offset in report.skipped:
        _log.error("%s: corrupt mark record at byte %d skipped", path, offset)
    if report.damage is not None:
        _cut_tail(fs, loaded.fd, path, report, len(loaded.data))
    return MarkLog(fs, path, fd=loaded.fd, size=report.valid_end), acked, delivered


def recover_segment(
    fs: FileSystem,
    directory: str,
    segment_id: int,
    shared: SharedStore | None,
    tally: RecoveryTally,
) -> QueueSegment | None:
    """Rebuilds a segment's index from its file and marks; None if nothing in it is live (its
    files are removed then)."""
    path = os.path.join(directory, segment_file_name(segment_id))
    marks_path = os.path.join(directory, marks_file_name(segment_id))
    marks, acked_runs, delivered_runs = recover_marks(fs, marks_path)
    loaded = load_file(fs, path, FileKind.QUEUE_SEGMENT)

    def remove_files() -> None:
        fs.close(loaded.fd)
        if marks is not None:
            marks.close()
        # The segment first: acks must never disappear before the messages they ack.
        fs.remove(path)
        fs.remove(marks_path)

    if not loaded.header_ok:
        _log.warning("%s: no valid header (torn at creation); removing it", path)
        tally.torn_files += 1
        remove_files()
        return None
    index = SegmentIndex(segment_id)
    acked = _RunCursor(acked_runs)
    delivered = _RunCursor(delivered_runs)
    report = ScanReport()
    # The hot loop of a boot: one pass per record, so the common case is inlined.
    unpack_prefix = RECORD_PREFIX.unpack_from
    highest = tally.highest_seq
    live = 0
    body_bytes = 0
    add = index.add
    for offset, payload in scan_frames(loaded.data, HEADER_SIZE, report):
        size = len(payload)
        if size < PREFIX_SIZE:
            _log.error("%s: record at byte %d skipped: too short", path, offset)
            continue
        version, flags, seq, exchange_len, key_len, header_len = unpack_prefix(payload, 0)
        body_size = size - PREFIX_SIZE - exchange_len - key_len - header_len
        if version != RECORD_VERSION or body_size < 0:
            _log.error("%s: record at byte %d skipped: undecodable", path, offset)
            continue
        if highest is not None and seq <= highest:
            _log.error("%s: record at byte %d skipped: seq %d out of order", path, offset, seq)
            continue
        highest = seq
        if flags & FLAG_TRANSIENT:
            tally.transient_dropped += 1
            continue
        ref = None
        if flags & FLAG_SHARED_BODY:
            try:
                ref = decode_head(payload).body_ref
            except CorruptRecord as error:
                _log.error("%s: record at byte %d skipped: %s", path, offset, error)
                continue
            assert ref is not None
            if shared is None or not shared.is_available(ref):
                tally.missing_bodies[ref.file_id] += 1
                continue
            body_size = ref.size
        is_acked = acked.contains(seq)
        add(seq, acked=is_acked, delivered=not is_acked and delivered.contains(seq))
        index.accounted_bytes += FRAME_OVERHEAD + size + (body_size if ref else 0)
        if not is_acked:
            live += 1
            body_bytes += body_size
            if ref is not None:
                index.add_shared_ref(ref.file_id)
    tally.highest_seq = highest
    tally.live += live
    tally.body_bytes += body_bytes
    for offset in report.skipped:
        _log.error("%s: corrupt record at byte %d skipped", path, offset)
    if report.damage is not None:
        tally.torn_files += 1
        _cut_tail(fs, loaded.fd, path, report, len(loaded.data))
    if index.live == 0:
        remove_files()
        return None
    return QueueSegment(
        fs, directory, index, reader_fd=loaded.fd, end=report.valid_end, marks=marks
    )
