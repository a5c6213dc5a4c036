"""The ready messages of a queue in delivery order: FIFO, or by priority then FIFO."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator

from .entry import QueueEntry


class FifoReady:
    """Ready entries of a classic queue, oldest first."""

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: deque[QueueEntry] = deque()

    def append(self, entry: QueueEntry) -> None:
        self._entries.append(entry)

    def popleft(self) -> QueueEntry:
        return self._entries.popleft()

    def head(self) -> QueueEntry:
        return self._entries[0]

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def __bool__(self) -> bool:
        return bool(self._entries)

    def __iter__(self) -> Iterator[QueueEntry]:
        return iter(self._entries)


class PriorityReady:
    """One FIFO per priority level; the highest non-empty level goes first."""

    __slots__ = ("_count", "_levels", "_top")

    def __init__(self, max_priority: int) -> None:
        self._levels: list[deque[QueueEntry]] = [deque() for _ in range(max_priority + 1)]
        self._count = 0
        self._top = -1  # highest level that may be non-empty

    def append(self, entry: QueueEntry) -> None:
        level = entry.priority
        self._levels[level].append(entry)
        self._count += 1
        self._top = max(self._top, level)

    def _top_level(self) -> deque[QueueEntry]:
        levels = self._levels
        top = self._top
        while not levels[top]:
            top -= 1
        self._top = top
        return levels[top]

    def popleft(self) -> QueueEntry:
        entry = self._top_level().popleft()
        self._count -= 1
        return entry

    def head(self) -> QueueEntry:
        return self._top_level()[0]

    def clear(self) -> None:
        for level in self._levels:
            level.clear()
        self._count = 0
        self._top = -1

    def __len__(self) -> int:
        return self._count

    def __bool__(self) -> bool:
        return self._count > 0

    def __iter__(self) -> Iterator[QueueEntry]:
        for level in reversed(self._levels):
            yield from level
