"""The file-system seam of the store: every byte the store reads or writes goes through here, so
tests can inject ENOSPC, EIO and power loss without a special disk."""

from __future__ import annotations

import contextlib
import os


class FileSystem:
    """Plain POSIX file operations on file descriptors. Subclass to inject faults."""

    def open_append(self, path: str) -> int:
        """Opens (creating if needed) a file for appending and positional reads."""
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o640)

    def open_read(self, path: str) -> int:
        return os.open(path, os.O_RDONLY | os.O_CLOEXEC)

    def write(self, fd: int, data: memoryview) -> int:
        """Writes some prefix of data and returns its length (like os.write)."""
        return os.write(fd, data)

    def sync(self, fd: int) -> None:
        """Makes the file's data, and the size needed to read it, durable."""
        os.fdatasync(fd)

    def sync_directory(self, path: str) -> None:
        """Makes the creation or removal of entries in a directory durable."""
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def truncate(self, fd: int, size: int) -> None:
        os.ftruncate(fd, size)

    def pread(self, fd: int, size: int, offset: int) -> bytes:
        return os.pread(fd, size, offset)

    def size(self, fd: int) -> int:
        return os.fstat(fd).st_size

    def close(self, fd: int) -> None:
        os.close(fd)

    def remove(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def file_size(self, path: str) -> int | None:
        """The size of a file, or None if it does not exist."""
        try:
            return os.stat(path).st_size
        except FileNotFoundError:
            return None

    def listdir(self, path: str) -> list[str]:
        try:
            return os.listdir(path)
        except FileNotFoundError:
            return []

    def makedirs(self, path: str, *, sync_entry: bool = True) -> None:
        """Creates missing directories, each made durable in its parent (a queue's directory
        vanishing after a power cut would take its fsynced files with it).

        With `sync_entry=False` the entry of `path` itself is left for the caller to make
        durable before it relies on it: a queue store does so with its first fsync, in the
        group committer's thread, so that declaring a durable queue does not wait for the disk
        on the event loop.
        """
        if os.path.isdir(path):
            return
        parent = os.path.dirname(os.path.abspath(path))
        self.makedirs(parent)
        try:
            os.mkdir(path)
        except FileExistsError:
            return
        if sync_entry:
            self.sync_directory(parent)

    def remove_directory(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.rmdir(path)


DEFAULT_FILE_SYSTEM = FileSystem()
