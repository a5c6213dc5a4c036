"""An append-only file that buffers writes in memory, hands them to the OS in one write per
flush, and keeps every byte until an fsync has covered it, so a failed write or fsync can be
retried without ever damaging what is already durable."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from .errors import StoreError, StoreWriteError
from .files import FileSystem

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SyncTicket:
    """One fsync to run in the worker thread: the file, and the size it will make durable."""

    fd: int
    end: int
    # Directories whose entries this fsync must also make durable (the file's, then parents).
    directories: tuple[str, ...]


class AppendOnlyFile:
    """One append-only file as the group committer drives it.

    Bytes before `_base` are durable. `_tail` holds everything after `_base`: the first
    `_written` bytes of it were handed to the OS, the rest only live here. Only the event-loop
    thread changes this state; the worker thread only calls fsync on the descriptor of a ticket,
    and no truncate or close happens while a ticket is out.
    """

    def __init__(
        self,
        fs: FileSystem,
        path: str,
        *,
        initial: bytes = b"",
        fd: int | None = None,
        durable_size: int = 0,
        parent_directories: tuple[str, ...] = (),
    ) -> None:
        self.path = path
        self._fs = fs
        self._fd = fd
        self._base = durable_size
        self._tail = bytearray(initial)
        self._written = 0
        self._needs_rewrite = False
        # A new file's directory entry must be made durable once, with its first fsync; so
        # must `parent_directories`, when the file's directory is new too.
        self._directory_synced = fd is not None
        self._parent_directories = parent_directories
        self._syncing = False
        self._close_after_sync = False
        self._closed = False

    @property
    def end(self) -> int:
        """The logical size: durable, written and buffered bytes together."""
        return self._base + len(self._tail)

    @property
    def needs_flush(self) -> bool:
        return not self._closed and (self._needs_rewrite or self._written < len(self._tail))

    @property
    def needs_sync(self) -> bool:
        return not self._closed and (bool(self._tail) or not self._directory_synced)

    @property
    def buffered_bytes(self) -> int:
        return len(self._tail)

    def append(self, data: bytes | bytearray | memoryview) -> int:
        """Buffers data and returns the file offset it will have."""
        offset = self._base + len(self._tail)
        self._tail += data
        return offset

    def read(self, offset: int, size: int) -> bytes:
        """Reads bytes that may be durable, written or still buffered."""
        if offset >= self._base:
            start = offset - self._base
            return bytes(self._tail[start : start + size])
        durable_part = min(size, self._base - offset)
        assert self._fd is not None
        head = self._fs.pread(self._fd, durable_part, offset)
        if durable_part == size:
            return head
        return head + bytes(self._tail[: size - durable_part])

    def flush(self) -> None:
        """Hands buffered bytes to the OS, in as few writes as the OS allows.

        Allowed while an fsync is in flight (the bytes then count for the next batch), so a
        kill -9 cannot lose what was handed over. On error the file is truncated back to its
        durable size before the next attempt, so a partial write never leaves a torn record
        between good ones; that truncation waits until no fsync is in flight.
        """
        if self._closed or not self.needs_flush or (self._needs_rewrite and self._syncing):
            return
        try:
            if self._fd is None:
                self._fd = self._fs.open_append(self.path)
            if self._needs_rewrite:
                self._fs.truncate(self._fd, self._base)
                self._written = 0
                self._needs_rewrite = False
            with memoryview(self._tail) as view:
                while self._written < len(view):
                    # Released explicitly: a traceback holding the slice would otherwise keep
                    # the buffer exported and make every later append fail.
                    with view[self._written :] as chunk:
                        count = self._fs.write(self._fd, chunk)
                    if count <= 0:
                        raise OSError("write returned no progress")
                    self._written += count
        except OSError as error:
            self._needs_rewrite = True
            raise StoreWriteError(f"cannot write {self.path}: {error}") from error

    def begin_sync(self) -> SyncTicket | None:
        """Starts an fsync of what was written, or None if there is nothing to make durable."""
        if self._syncing or self._closed or self._fd is None or self._needs_rewrite:
            return None
        if self._written == 0 and self._directory_synced:
            return None
        self._syncing = True
        directories = (
            ()
            if self._directory_synced
            else (os.path.dirname(self.path) or ".", *self._parent_directories)
        )
        return SyncTicket(self._fd, self._base + self._written, directories)

    def run_sync(self, ticket: SyncTicket) -> None:
        """Runs in the worker thread."""
        self._fs.sync(ticket.fd)
        for directory in ticket.directories:
            self._fs.sync_directory(directory)

    def end_sync(self, ticket: SyncTicket, error: BaseException | None) -> None:
        """Back on the event loop: drops what became durable, or marks it for rewriting."""
        self._syncing = False
        if error is None:
            covered = ticket.end - self._base
            del self._tail[:covered]
            self._written -= covered
            self._base = ticket.end
            if ticket.directories:
                self._directory_synced = True
        else:
            # After a failed fsync the page cache cannot be trusted: rewrite from the durable end.
            self._needs_rewrite = True
        if self._close_after_sync:
            self._release_fd()

    def sync_now(self) -> None:
        """Flushes and fsyncs on the calling thread (shutdown, tools, tests)."""
        if self._syncing:
            raise StoreError(f"{self.path}: an fsync is in flight; wait for the group committer")
        self.flush()
        ticket = self.begin_sync()
        if ticket is None:
            return
        try:
            self.run_sync(ticket)
        except OSError as error:
            self.end_sync(ticket, error)
            raise StoreWriteError(f"cannot sync {self.path}: {error}") from error
        self.end_sync(ticket, None)

    def close(self) -> None:
        """Closes the descriptor (after an in-flight fsync, if any); buffered bytes are dropped."""
        if self._closed:
            return
        self._closed = True
        if self._syncing:
            self._close_after_sync = True
        else:
            self._release_fd()

    def remove(self) -> None:
        self.close()
        self._fs.remove(self.path)

    def _release_fd(self) -> None:
        if self._fd is not None:
            try:
                self._fs.close(self._fd)
            except OSError as error:
                _log.warning("closing %s failed: %s", self.path, error)
            self._fd = None
