"""One node per data directory: an exclusive lock held from start until the process exits.

Two nodes writing one directory would overwrite each other's journal and segment files, so the
second refuses to start (as RabbitMQ refuses a second node of the same name). The lock is an
flock on a file inside the directory: the kernel releases it when the process dies, however it
dies, so a crashed node never leaves a stale lock behind. The file holds the owner's PID for the
message the next node prints.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

LOCK_FILE_NAME = "leveret.lock"


class DataDirInUse(Exception):
    """Another process holds the data directory."""


class DataDirLock:
    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / LOCK_FILE_NAME
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock, or raise DataDirInUse naming the directory and the holder's PID."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_pid(fd)
            os.close(fd)
            by = f" by the process with PID {holder}" if holder else ""
            raise DataDirInUse(
                f"the data directory {self.path.parent} is in use{by}: another node runs on it"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None


def _read_pid(fd: int) -> int | None:
    try:
        return int(os.pread(fd, 32, 0).split()[0])
    except (OSError, ValueError, IndexError):
        return None
