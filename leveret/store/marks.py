"""The mark log beside each queue segment: which of its messages were delivered and which were
acknowledged, written lazily as runs of sequence numbers."""

from __future__ import annotations

import struct
from enum import IntEnum

from .appender import AppendOnlyFile, SyncTicket
from .errors import CorruptRecord
from .files import FileSystem
from .segment import FileKind, file_header, frame

MARKS_VERSION = 1
_HEAD = struct.Struct("<BBI")
_RUN = struct.Struct("<QI")


class MarkKind(IntEnum):
    DELIVERED = 1
    ACKED = 2


def runs(seqs: list[int]) -> list[tuple[int, int]]:
    """Sorted, de-duplicated seqs as (first, count) runs: FIFO acks collapse to a few runs."""
    result: list[tuple[int, int]] = []
    for seq in sorted(set(seqs)):
        if result and result[-1][0] + result[-1][1] == seq:
            first, count = result[-1]
            result[-1] = (first, count + 1)
        else:
            result.append((seq, 1))
    return result


def encode_marks(kind: MarkKind, seq_runs: list[tuple[int, int]]) -> bytes:
    parts = [_HEAD.pack(MARKS_VERSION, kind, len(seq_runs))]
    parts.extend(_RUN.pack(first, count) for first, count in seq_runs)
    return b"".join(parts)


def decode_marks(payload: memoryview) -> tuple[MarkKind, list[tuple[int, int]]]:
    if len(payload) < _HEAD.size:
        raise CorruptRecord("mark record too short")
    version, kind, count = _HEAD.unpack_from(payload, 0)
    if version != MARKS_VERSION or kind not in (MarkKind.DELIVERED, MarkKind.ACKED):
        raise CorruptRecord(f"unknown mark record version {version} kind {kind}")
    if len(payload) != _HEAD.size + count * _RUN.size:
        raise CorruptRecord("mark record length does not match its run count")
    return MarkKind(kind), [
        _RUN.unpack_from(payload, _HEAD.size + index * _RUN.size) for index in range(count)
    ]


class MarkLog:
    """Buffers marks for one segment and encodes them as runs when the committer flushes."""

    def __init__(self, fs: FileSystem, path: str, *, fd: int | None = None, size: int = 0) -> None:
        initial = file_header(FileKind.MARKS) if fd is None else b""
        self._file = AppendOnlyFile(fs, path, initial=initial, fd=fd, durable_size=size)
        self._delivered: list[int] = []
        self._acked: list[int] = []

    @property
    def path(self) -> str:
        return self._file.path

    @property
    def needs_flush(self) -> bool:
        return bool(self._delivered or self._acked) or self._file.needs_flush

    @property
    def needs_sync(self) -> bool:
        return bool(self._delivered or self._acked) or self._file.needs_sync

    def add_delivered(self, seq: int) -> None:
        self._delivered.append(seq)

    def add_acked(self, seq: int) -> None:
        self._acked.append(seq)

    def flush(self) -> None:
        self._encode_pending()
        self._file.flush()

    def begin_sync(self) -> SyncTicket | None:
        return self._file.begin_sync()

    def run_sync(self, ticket: SyncTicket) -> None:
        self._file.run_sync(ticket)

    def end_sync(self, ticket: SyncTicket, error: BaseException | None) -> None:
        self._file.end_sync(ticket, error)

    def sync_now(self) -> None:
        self._encode_pending()
        self._file.sync_now()

    def close(self) -> None:
        self._file.close()

    def remove(self) -> None:
        self._delivered.clear()
        self._acked.clear()
        self._file.remove()

    def _encode_pending(self) -> None:
        if self._acked:
            acked = runs(self._acked)
            self._file.append(frame(encode_marks(MarkKind.ACKED, acked)))
            # A delivery mark is pointless once the ack is written beside it.
            acked_set = set(self._acked)
            self._delivered = [seq for seq in self._delivered if seq not in acked_set]
            self._acked = []
        if self._delivered:
            self._file.append(frame(encode_marks(MarkKind.DELIVERED, runs(self._delivered))))
            self._delivered = []
