"""ReadIndex bookkeeping: reads wait until a quorum confirms the leader is still the leader."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class _PendingRead:
    round: int
    index: int
    context: bytes


@dataclass(slots=True)
class ReadIndexTracker:
    """Numbers heartbeat rounds and releases reads once a quorum acknowledged their round."""

    round: int = 0
    _acked: dict[str, int] = field(default_factory=dict)
    _pending: list[_PendingRead] = field(default_factory=list)

    def add(self, context: bytes, commit_index: int) -> int:
        """Register a read at `commit_index`; returns the heartbeat round that must confirm it."""
        self.round += 1
        self._pending.append(_PendingRead(self.round, commit_index, context))
        return self.round

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
                1 for voter in voters if voter == leader or self._acked.get(voter, 0) >= read.round
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
