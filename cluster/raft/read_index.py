"""ReadIndex bookkeeping: reads wait until a quorum confirms the leader is still the leader."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class _PendingRead:
    round: int
    index: int
    context: bytes
    # A follower that asked for the read and will itself confirm, when the answer reaches it,
    # that it still follows this leader in this term (it counts towards the quorum).
    confirmed_by: str | None = None


@dataclass(slots=True)
class ReadIndexTracker:
    """Numbers heartbeat rounds and releases reads once a quorum acknowledged their round."""

    round: int = 0
    _acked: dict[str, int] = field(default_factory=dict)
    _pending: list[_PendingRead] = field(default_factory=list)

    def add(self, context: bytes, commit_index: int, confirmed_by: str | None = None) -> int:
        """Register a read at `commit_index`; returns the heartbeat round that must confirm it.
        `confirmed_by` counts as one confirmation (see _PendingRead)."""
        self.round += 1
        self._pending.append(_PendingRead(self.round, commit_index, context, confirmed_by))
        return self.round

    def pending(self, context: bytes) -> bool:
        """Whether the read of `context` still waits for confirmations."""
        return any(read.context == context for read in self._pending)

    @property
    def idle(self) -> bool:
        """Whether no read waits for confirmations."""
        return not self._pending

    def ack(self, peer: str, round_: int) -> None:
        """Record that `peer` answered the heartbeat of `round_`."""
        if round_ > self._acked.get(peer, 0):
            self._acked[peer] = round_

    def release(self, voters: tuple[str, ...], leader: str, quorum: int) -> list[tuple[bytes, int]]:
        """The reads now confirmed by a quorum, oldest first, as (context, index)."""
        released: list[tuple[bytes, int]] = []
        while self._pending:
            read = self._pending[0]
            confirmations = sum(
                1
                for voter in voters
                if voter in (leader, read.confirmed_by) or self._acked.get(voter, 0) >= read.round
            )
            if confirmations < quorum:
                break
            released.append((read.context, read.index))
            self._pending.pop(0)
        return released

    def drop_all(self) -> list[bytes]:
        """Forget every pending read (leadership lost); returns their contexts."""
        contexts = [read.context for read in self._pending]
        self._pending.clear()
        self._acked.clear()
        return contexts
