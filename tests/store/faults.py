"""File systems for store tests: one that injects ENOSPC and EIO, one that counts operations,
and one that forgets everything not fsynced when it "loses power"."""

from __future__ import annotations

import contextlib
import errno
import os
import random
import threading

from leveret.store.files import FileSystem


class CountingFileSystem(FileSystem):
    """Counts writes and fsyncs per path, so tests can check batching."""

    def __init__(self) -> None:
        self.paths: dict[int, str] = {}
        self.writes: dict[str, int] = {}
        self.syncs: dict[str, int] = {}
        self._lock = threading.Lock()

    def open_append(self, path: str) -> int:
        fd = super().open_append(path)
        self.paths[fd] = path
        return fd

    def write(self, fd: int, data: memoryview) -> int:
        path = self.paths.get(fd, "?")
        self.writes[path] = self.writes.get(path, 0) + 1
        return super().write(fd, data)

    def sync(self, fd: int) -> None:
        super().sync(fd)
        path = self.paths.get(fd, "?")
        with self._lock:
            self.syncs[path] = self.syncs.get(path, 0) + 1

    def total_syncs(self) -> int:
        with self._lock:
            return sum(self.syncs.values())

    def syncs_of(self, suffix: str) -> int:
        with self._lock:
            return sum(count for path, count in self.syncs.items() if path.endswith(suffix))


class FaultyFileSystem(CountingFileSystem):
    """Injects write and fsync errors on demand.

    `write_budget`: bytes that may still be written before writes fail with ENOSPC (None: no
    limit). The write that crosses the budget writes a prefix and then raises (worse than a real
    kernel, which returns a short count first), so callers must cope with torn writes.
    `sync_error`: errno that fsync of data files raises while set.
    """

    def __init__(self) -> None:
        super().__init__()
        self.write_budget: int | None = None
        self.sync_error: int | None = None
        self.failed_writes = 0
        self.failed_syncs = 0

    def write(self, fd: int, data: memoryview) -> int:
        if self.write_budget is not None:
            if self.write_budget < len(data):
                allowed = self.write_budget
                if allowed:
                    os.write(fd, data[:allowed])
                self.write_budget = 0
                self.failed_writes += 1
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            self.write_budget -= len(data)
        return super().write(fd, data)

    def sync(self, fd: int) -> None:
        if self.sync_error is not None:
            self.failed_syncs += 1
            raise OSError(self.sync_error, os.strerror(self.sync_error))
        super().sync(fd)


class PowerLossFileSystem(FileSystem):
    """Remembers what each file's last successful fsync made durable; crash() then throws away
    everything else: unsynced bytes are cut at a random point (a torn writeback) and files
    whose directory entry was never synced disappear."""

    def __init__(self, seed: int) -> None:
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self.paths: dict[int, str] = {}
        self.durable_size: dict[str, int] = {}
        self.entry_durable: dict[str, bool] = {}
        self._frozen = False

    def freeze(self) -> None:
        """The moment power is lost: fsyncs that complete after this count for nothing."""
        with self._lock:
            self._frozen = True

    def open_append(self, path: str) -> int:
        existed = os.path.exists(path)
        fd = super().open_append(path)
        with self._lock:
            self.paths[fd] = path
            if not existed:
                self.durable_size[path] = 0
                self.entry_durable[path] = False
            elif path not in self.durable_size:
                self.durable_size[path] = os.fstat(fd).st_size
                self.entry_durable[path] = True
        return fd

    def sync(self, fd: int) -> None:
        # Only what was written before the fsync began is durable when it returns.
        size = os.fstat(fd).st_size
        super().sync(fd)
        with self._lock:
            if not self._frozen:
                self.durable_size[self.paths[fd]] = size

    def truncate(self, fd: int, size: int) -> None:
        super().truncate(fd, size)
        with self._lock:
            path = self.paths[fd]
            self.durable_size[path] = min(self.durable_size.get(path, size), size)

    def sync_directory(self, path: str) -> None:
        super().sync_directory(path)
        with self._lock:
            if self._frozen:
                return
            for file_path in self.entry_durable:
                if os.path.dirname(file_path) == path:
                    self.entry_durable[file_path] = True

    def remove(self, path: str) -> None:
        super().remove(path)
        with self._lock:
            self.durable_size.pop(path, None)
            self.entry_durable.pop(path, None)

    def crash(self) -> None:
        """Call once the event loop that used the files has stopped (the store objects are
        abandoned); forgets everything that was not durable at freeze()."""
        self.freeze()
        for fd in list(self.paths):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.paths.clear()
        for path, durable in sorted(self.durable_size.items()):
            if not os.path.exists(path):
                continue
            if not self.entry_durable.get(path, True):
                os.remove(path)
                continue
            size = os.path.getsize(path)
            keep = self._random.randint(durable, size) if size > durable else size
            with open(path, "r+b") as file:
                file.truncate(keep)
                if keep > durable and self._random.random() < 0.5:
                    # The last unsynced page reached the disk with garbage in it.
                    file.seek(self._random.randint(durable, keep - 1))
                    file.write(bytes([self._random.randrange(256)]))
