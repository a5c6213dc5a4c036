"""What stable storage holds for one node, kept in memory: the model every storage follows."""

from __future__ import annotations

from cluster.raft.ready import Ready
from cluster.raft.types import Entry, HardState, Snapshot, StorageState


class MemoryStorage:
    """Applies Ready batches exactly as durable storage must; used by tests and as a mirror."""

    def __init__(self) -> None:
        self.hard_state = HardState()
        self.snapshot: Snapshot | None = None
        self._entries: list[Entry] = []

    @property
    def base_index(self) -> int:
        """The index just before the first stored entry (the snapshot's index, or 0)."""
        return self.snapshot.index if self.snapshot else 0

    @property
    def entries(self) -> tuple[Entry, ...]:
        """The stored entries, contiguous after `base_index`."""
        return tuple(self._entries)

    def load(self) -> StorageState:
        """What a node restarting from this storage recovers."""
        return StorageState(self.hard_state, self.snapshot, tuple(self._entries))

    def persist(self, ready: Ready) -> None:
        """Store everything `ready` asks to persist, in the order the Ready contract gives."""
        if ready.snapshot is not None:
            self.save_snapshot(ready.snapshot)
        if ready.truncate_from is not None:
            self.truncate(ready.truncate_from)
        for entry in ready.entries:
            self.append(entry)
        if ready.hard_state is not None:
            self.hard_state = ready.hard_state

    def save_snapshot(self, snapshot: Snapshot) -> None:
        """Keep `snapshot`; keep later entries only if they continue from its last entry."""
        if self.snapshot is not None and snapshot.index <= self.snapshot.index:
            return
        held = self._entry_at(snapshot.index)
        if held is not None and held.term == snapshot.term:
            self._entries = self._entries[snapshot.index - self.base_index :]
        else:
            # A snapshot from the leader replaces a log that disagrees with it.
            self._entries = []
        self.snapshot = snapshot

    def truncate(self, index: int) -> None:
        """Drop the entries at and after `index`."""
        keep = max(index - self.base_index - 1, 0)
        del self._entries[keep:]

    def append(self, entry: Entry) -> None:
        """Store `entry`, which must directly follow the last stored one."""
        expected = self.base_index + len(self._entries) + 1
        if entry.index != expected:
            raise ValueError(f"stored log expects entry {expected}, got {entry.index}")
        self._entries.append(entry)

    def _entry_at(self, index: int) -> Entry | None:
        position = index - self.base_index - 1
        if 0 <= position < len(self._entries):
            return self._entries[position]
        return None
