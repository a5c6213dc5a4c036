"""Durable Raft storage: an append-only record log plus an atomically replaced snapshot file."""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO, Protocol

from cluster.raft.memory_storage import MemoryStorage
from cluster.raft.ready import Ready
from cluster.raft.records import Base, Record, Truncate, decode_records, encode_record
from cluster.raft.types import Entry, HardState, Snapshot, StorageState

LOG_FILE = "raft.log"
SNAPSHOT_FILE = "raft.snapshot"
_TMP_SUFFIX = ".tmp"


class RaftStorage(Protocol):
    """Where a node keeps what it must not forget across crashes."""

    def load(self) -> StorageState:
        """What the node recovers on start."""
        ...

    def persist(self, ready: Ready) -> None:
        """Make the persistent part of `ready` durable before returning."""
        ...


class StorageCorrupted(Exception):
    """Stable storage holds something no sequence of writes could have produced."""


class FileStorage:
    """Raft storage in a directory; `write` batches, `sync` makes the batches durable (fsync).

    The log file is a sequence of length + crc32 framed records; recovery cuts a torn or corrupt
    tail. Saving a snapshot writes it to a temporary file, fsyncs, renames it into place and
    fsyncs the directory, then rewrites the log the same way without the entries it covers.
    """

    def __init__(self, directory: Path | str, fsync: bool = True) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._fsync = fsync
        self._mirror = MemoryStorage()
        self._file: BinaryIO | None = None
        self._recover()

    def load(self) -> StorageState:
        """What the node recovers on start."""
        return self._mirror.load()

    def persist(self, ready: Ready) -> None:
        """Write and fsync the persistent part of `ready`."""
        self.write(ready)
        self.sync()

    def write(self, ready: Ready) -> None:
        """Write the persistent part of `ready` without waiting for the disk (see `sync`)."""
        base = self._mirror.base_index
        if ready.snapshot is not None and ready.snapshot.index > base:
            self._mirror.save_snapshot(ready.snapshot)
            self._write_snapshot_file(ready.snapshot)
            self._rewrite_log()
        records: list[Record] = []
        if ready.truncate_from is not None:
            self._mirror.truncate(ready.truncate_from)
            records.append(Truncate(ready.truncate_from))
        for entry in ready.entries:
            self._mirror.append(entry)
            records.append(entry)
        if ready.hard_state is not None:
            self._mirror.hard_state = ready.hard_state
            records.append(ready.hard_state)
        if records:
            self._log_file().write(b"".join(encode_record(record) for record in records))

    def sync(self) -> None:
        """Make everything written so far durable."""
        if self._file is not None:
            self._file.flush()
            if self._fsync:
                os.fsync(self._file.fileno())

    def close(self) -> None:
        """Sync and release the log file."""
        if self._file is not None:
            self.sync()
            self._file.close()
            self._file = None

    # -- recovery ------------------------------------------------------------------------

    def _recover(self) -> None:
        for leftover in self.directory.glob("*" + _TMP_SUFFIX):
            leftover.unlink()
        snapshot = self._read_snapshot_file()
        hard_state, base, entries = self._read_log_file()
        if snapshot is None:
            if base.index != 0:
                raise StorageCorrupted(f"log starts after {base.index} but there is no snapshot")
        elif base.index > snapshot.index:
            raise StorageCorrupted(f"log starts after {base.index}, past snapshot {snapshot.index}")
        mirror = MemoryStorage()
        mirror.hard_state = hard_state
        if base.index == 0:
            for entry in entries:
                mirror.append(entry)
            if snapshot is not None:
                mirror.save_snapshot(snapshot)
        else:
            assert snapshot is not None
            # Rebuild the mirror as "snapshot at base, then entries", then apply a newer snapshot
            # saved just before a crash interrupted the log rewrite.
            mirror.snapshot = Snapshot(base.index, base.term, ())
            for entry in entries:
                mirror.append(entry)
            if snapshot.index > base.index:
                mirror.save_snapshot(snapshot)
            else:
                mirror.snapshot = snapshot
        self._mirror = mirror
        if snapshot is not None and base.index != snapshot.index:
            self._rewrite_log()

    def _read_snapshot_file(self) -> Snapshot | None:
        path = self.directory / SNAPSHOT_FILE
        if not path.exists():
            return None
        data = path.read_bytes()
        records, used = decode_records(data)
        if used != len(data) or len(records) != 1 or not isinstance(records[0], Snapshot):
            raise StorageCorrupted(f"{path} is damaged")
        return records[0]

    def _read_log_file(self) -> tuple[HardState, Base, list[Entry]]:
        path = self.directory / LOG_FILE
        data = path.read_bytes() if path.exists() else b""
        records, used = decode_records(data)
        if used < len(data):
            # A torn tail: the batch being written when the node stopped was never fsynced,
            # so nothing that depends on it was sent or applied.
            with open(path, "r+b") as file:
                file.truncate(used)
                self._sync_file(file)
        hard_state, base = HardState(), Base(0, 0)
        entries: list[Entry] = []
        for record in records:
            if isinstance(record, Entry):
                expected = base.index + len(entries) + 1
                if record.index > expected or record.index <= base.index:
                    raise StorageCorrupted(f"entry {record.index} where {expected} was expected")
                del entries[record.index - base.index - 1 :]
                entries.append(record)
            elif isinstance(record, HardState):
                hard_state = record
            elif isinstance(record, Truncate):
                del entries[max(record.index - base.index - 1, 0) :]
            elif isinstance(record, Base):
                base, entries = record, []
            else:
                raise StorageCorrupted("a snapshot record inside the log file")
        return hard_state, base, entries

    # -- writing -------------------------------------------------------------------------

    def _log_file(self) -> BinaryIO:
        if self._file is None:
            # Kept open across batches; `close` releases it.
            self._file = open(self.directory / LOG_FILE, "ab")  # noqa: SIM115
        return self._file

    def _write_snapshot_file(self, snapshot: Snapshot) -> None:
        self._replace_file(SNAPSHOT_FILE, encode_record(snapshot))

    def _rewrite_log(self) -> None:
        snapshot = self._mirror.snapshot
        assert snapshot is not None
        records: list[Record] = [Base(snapshot.index, snapshot.term)]
        records.extend(self._mirror.entries)
        records.append(self._mirror.hard_state)
        if self._file is not None:
            self._file.close()
            self._file = None
        self._replace_file(LOG_FILE, b"".join(encode_record(record) for record in records))

    def _replace_file(self, name: str, content: bytes) -> None:
        tmp = self.directory / (name + _TMP_SUFFIX)
        with open(tmp, "wb") as file:
            file.write(content)
            self._sync_file(file)
        os.replace(tmp, self.directory / name)
        if self._fsync:
            directory = os.open(self.directory, os.O_RDONLY)
            try:
                os.fsync(directory)
            finally:
                os.close(directory)

    def _sync_file(self, file: BinaryIO) -> None:
        file.flush()
        if self._fsync:
            os.fsync(file.fileno())
