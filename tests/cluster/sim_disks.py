"""Stable storage for simulated nodes, including what a crash in the middle of a write leaves."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from cluster.raft import Ready, StorageState
from cluster.raft.memory_storage import MemoryStorage
from cluster.raft.storage import LOG_FILE, FileStorage


class SimDisk(Protocol):
    """What survives a simulated crash."""

    def load(self) -> StorageState: ...

    def persist(self, ready: Ready) -> None: ...

    def persist_torn(self, ready: Ready, rng: random.Random) -> bool:
        """Crash while persisting `ready`: some prefix of it lands; whether all of it did."""
        ...


class MemoryDisk:
    """The in-memory model of stable storage; a crash keeps a prefix of the batch's writes."""

    def __init__(self) -> None:
        self.storage = MemoryStorage()

    def load(self) -> StorageState:
        return self.storage.load()

    def persist(self, ready: Ready) -> None:
        self.storage.persist(ready)

    def persist_torn(self, ready: Ready, rng: random.Random) -> bool:
        storage = self.storage
        steps: list[Callable[[], None]] = []
        if ready.snapshot is not None:
            snapshot = ready.snapshot
            steps.append(lambda: storage.save_snapshot(snapshot))
        if ready.truncate_from is not None:
            truncate_from = ready.truncate_from
            steps.append(lambda: storage.truncate(truncate_from))
        for entry in ready.entries:
            steps.append(lambda entry=entry: storage.append(entry))  # type: ignore[misc]
        if ready.hard_state is not None:
            hard_state = ready.hard_state
            steps.append(lambda: setattr(storage, "hard_state", hard_state))
        landed = rng.randrange(len(steps) + 1)
        for step in steps[:landed]:
            step()
        return landed == len(steps)


class FileDisk:
    """The real file storage in a directory; a crash tears the log file at a random byte."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._storage: FileStorage | None = None

    def load(self) -> StorageState:
        """Recover from the files, as a restarted process would."""
        if self._storage is not None:
            self._storage.close()
        # fsync adds nothing here: the simulated crash tears the file explicitly.
        self._storage = FileStorage(self.directory, fsync=False)
        return self._storage.load()

    def persist(self, ready: Ready) -> None:
        assert self._storage is not None
        self._storage.persist(ready)

    def persist_torn(self, ready: Ready, rng: random.Random) -> bool:
        storage, self._storage = self._storage, None
        assert storage is not None
        if ready.snapshot is not None and rng.random() < 0.5:
            storage.close()
            return False  # the crash came before the atomic snapshot replacement
        log = self.directory / LOG_FILE
        storage.sync()
        before = log.stat().st_size if log.exists() and ready.snapshot is None else 0
        storage.persist(ready)
        storage.close()
        after = log.stat().st_size if log.exists() else 0
        cut = rng.randint(before, after)
        if cut < after:
            with open(log, "r+b") as file:
                file.truncate(cut)
        return cut == after
