"""A leader's view of one follower's log: how far it matches and how to send it more."""

from __future__ import annotations

from collections import deque
from enum import Enum


class ProgressState(Enum):
    """How the leader replicates to one follower."""

    # Unsure where the logs agree: one append in flight at a time, until a response.
    PROBE = "probe"
    # Logs agree up to `match`: appends are pipelined optimistically.
    REPLICATE = "replicate"
    # The follower needs a snapshot; appends wait until it is acknowledged.
    SNAPSHOT = "snapshot"


class Progress:
    """Replication state for one follower, kept by the leader only."""

    def __init__(self, next_index: int, now: int) -> None:
        self.match = 0
        self.next = next_index
        self.state = ProgressState.PROBE
        self.probe_sent = False
        self.pending_snapshot = 0
        self.snapshot_ticks = 0
        # The leader's tick count when this follower last answered (for check-quorum).
        self.heard_at = now
        # Last index of each append in flight, oldest first (REPLICATE only).
        self._inflight: deque[int] = deque()

    def is_paused(self, max_inflight: int) -> bool:
        """Whether the leader should hold back appends to this follower for now."""
        if self.state is ProgressState.PROBE:
            return self.probe_sent
        if self.state is ProgressState.SNAPSHOT:
            return True
        return len(self._inflight) >= max_inflight

    def on_sent(self, last_sent: int, entry_count: int) -> None:
        """Record an append whose last entry is `last_sent`."""
        if self.state is ProgressState.REPLICATE:
            if entry_count:
                self.next = last_sent + 1
                self._inflight.append(last_sent)
        else:
            self.probe_sent = True

    def on_acked(self, index: int) -> bool:
        """Record that the follower matches up to `index`; whether that is news."""
        self._free_inflight_to(index)
        if index <= self.match:
            return False
        self.match = index
        self.next = max(self.next, index + 1)
        self.probe_sent = False
        return True

    def on_rejected(self, rejected: int, hint: int) -> bool:
        """Step back after a refused append at `rejected`; False when the refusal is stale."""
        if self.state is ProgressState.REPLICATE:
            if rejected <= self.match:
                return False
            self.become_probe()
            return True
        if rejected != self.next - 1:
            return False
        self.next = max(min(rejected, hint + 1), self.match + 1)
        self.probe_sent = False
        return True

    def free_one_inflight(self) -> None:
        """Let one more append go when the pipeline may have lost messages."""
        if self._inflight:
            self._inflight.popleft()

    def become_probe(self) -> None:
        """Fall back to one append at a time, starting after the known match."""
        self.state = ProgressState.PROBE
        self.next = self.match + 1
        self.probe_sent = False
        self._inflight.clear()

    def become_replicate(self) -> None:
        """Pipeline appends after the known match."""
        self.state = ProgressState.REPLICATE
        self.next = self.match + 1
        self.probe_sent = False
        self._inflight.clear()

    def become_snapshot(self, snapshot_index: int) -> None:
        """Wait for the follower to take the snapshot at `snapshot_index`."""
        self.state = ProgressState.SNAPSHOT
        self.pending_snapshot = snapshot_index
        self.snapshot_ticks = 0
        self._inflight.clear()

    def _free_inflight_to(self, index: int) -> None:
        while self._inflight and self._inflight[0] <= index:
            self._inflight.popleft()
