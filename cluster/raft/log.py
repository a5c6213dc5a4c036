"""A node's in-memory Raft log: entries after the latest snapshot, and what is not yet persisted."""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from cluster.raft.membership import decode_conf_change
from cluster.raft.types import Entry, EntryKind, Snapshot


@dataclass(frozen=True, slots=True)
class Unpersisted:
    """The changes to the log that the caller has not been handed yet."""

    entries: tuple[Entry, ...]
    truncate_from: int | None
    snapshot: Snapshot | None


class RaftLog:
    """Entries `first_index`..`last_index`; everything before is covered by `snapshot`."""

    def __init__(self, snapshot: Snapshot | None, entries: Sequence[Entry]) -> None:
        self.snapshot = snapshot
        self._base_index = snapshot.index if snapshot else 0
        self._base_term = snapshot.term if snapshot else 0
        self._entries: list[Entry] = []
        self._conf_indices: list[int] = []
        self._unstable_from = self._base_index + 1
        self._truncate_from: int | None = None
        self._unsaved_snapshot: Snapshot | None = None
        self._extend(entries)
        self._unstable_from = self.last_index + 1

    # -- reading -------------------------------------------------------------------------

    @property
    def first_index(self) -> int:
        """The first index still held as an entry (one past the snapshot)."""
        return self._base_index + 1

    @property
    def last_index(self) -> int:
        """The index of the last entry, or of the snapshot when there are no entries."""
        return self._base_index + len(self._entries)

    @property
    def last_term(self) -> int:
        """The term of the last entry, or of the snapshot when there are no entries."""
        return self._entries[-1].term if self._entries else self._base_term

    def term_at(self, index: int) -> int | None:
        """The term of the entry at `index`; None when compacted away or beyond the end."""
        if index == self._base_index:
            return self._base_term
        if index < self._base_index or index > self.last_index:
            return None
        return self._entries[index - self._base_index - 1].term

    def entry(self, index: int) -> Entry:
        """The entry at `index`, which must be held."""
        if not self.first_index <= index <= self.last_index:
            raise IndexError(f"entry {index} not in log [{self.first_index}, {self.last_index}]")
        return self._entries[index - self._base_index - 1]

    def slice(self, low: int, high: int) -> tuple[Entry, ...]:
        """Entries `low`..`high` inclusive, all of which must be held."""
        if low > high:
            return ()
        if low < self.first_index or high > self.last_index:
            raise IndexError(f"slice [{low}, {high}] not in log")
        offset = self._base_index + 1
        return tuple(self._entries[low - offset : high - offset + 1])

    def is_up_to_date(self, last_index: int, last_term: int) -> bool:
        """Whether a log ending at (`last_index`, `last_term`) is at least as recent as this one."""
        if last_term != self.last_term:
            return last_term > self.last_term
        return last_index >= self.last_index

    def find_conflict_by_term(self, index: int, term: int) -> int:
        """The largest index <= `index` whose entry term is <= `term` (or the snapshot index).

        Entries after it cannot match a log whose entry at `index` has `term`, so a leader can
        skip them all at once instead of probing one index per round trip.
        """
        index = min(index, self.last_index)
        while index > self._base_index:
            entry_term = self.term_at(index)
            if entry_term is not None and entry_term <= term:
                break
            index -= 1
        return index

    def voters_at(self, index: int) -> tuple[str, ...]:
        """The voter set in effect once the log holds entries up to `index`."""
        position = bisect.bisect_right(self._conf_indices, index)
        if position:
            return decode_conf_change(self.entry(self._conf_indices[position - 1]).data).voters
        return self.snapshot.voters if self.snapshot else ()

    def last_conf_index(self) -> int:
        """The index of the newest CONF entry held (0 when the snapshot holds the membership)."""
        return self._conf_indices[-1] if self._conf_indices else 0

    # -- changing ------------------------------------------------------------------------

    def append(self, entries: Iterable[Entry]) -> None:
        """Append entries that must directly follow the last one."""
        self._extend(entries)

    def accept(self, entries: Sequence[Entry]) -> None:
        """Take a leader's entries: keep those that match, truncate at the first conflict only."""
        for position, entry in enumerate(entries):
            held_term = self.term_at(entry.index)
            if held_term == entry.term:
                continue
            if held_term is not None:
                self._truncate(entry.index)
            self._extend(entries[position:])
            return

    def compact(self, snapshot: Snapshot) -> None:
        """Replace the entries up to `snapshot.index`, which this log holds, by the snapshot."""
        if not self._base_index < snapshot.index <= self.last_index:
            raise ValueError(f"cannot compact at {snapshot.index}")
        drop = snapshot.index - self._base_index
        del self._entries[:drop]
        self._base_index, self._base_term = snapshot.index, snapshot.term
        self._conf_indices = [i for i in self._conf_indices if i > snapshot.index]
        self.snapshot = snapshot
        self._unsaved_snapshot = snapshot

    def restore(self, snapshot: Snapshot) -> None:
        """Discard the whole log in favour of a snapshot received from the leader."""
        self._entries = []
        self._conf_indices = []
        self._base_index, self._base_term = snapshot.index, snapshot.term
        self.snapshot = snapshot
        self._unsaved_snapshot = snapshot
        self._mark_truncated(snapshot.index + 1)

    def take_unpersisted(self) -> Unpersisted:
        """Hand over the changes not yet given to the caller, and forget them."""
        start = max(self._unstable_from, self.first_index)
        changes = Unpersisted(
            entries=self.slice(start, self.last_index),
            truncate_from=self._truncate_from,
            snapshot=self._unsaved_snapshot,
        )
        self._unstable_from = self.last_index + 1
        self._truncate_from = None
        self._unsaved_snapshot = None
        return changes

    def _extend(self, entries: Iterable[Entry]) -> None:
        for entry in entries:
            if entry.index != self.last_index + 1:
                raise ValueError(f"entry {entry.index} does not follow {self.last_index}")
            self._entries.append(entry)
            if entry.kind is EntryKind.CONF:
                self._conf_indices.append(entry.index)

    def _truncate(self, index: int) -> None:
        del self._entries[index - self._base_index - 1 :]
        self._conf_indices = [i for i in self._conf_indices if i < index]
        self._mark_truncated(index)

    def _mark_truncated(self, index: int) -> None:
        # Only entries already handed to the caller need to be dropped from stable storage.
        if index < self._unstable_from and (
            self._truncate_from is None or index < self._truncate_from
        ):
            self._truncate_from = index
        self._unstable_from = min(self._unstable_from, index)
