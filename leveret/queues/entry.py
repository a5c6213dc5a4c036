"""A message's place in one queue."""

from __future__ import annotations

from ..message import Message


class QueueEntry:
    """A message in one queue: its sequence number there, priority, expiry, and delivery state."""

    __slots__ = ("expires_at", "message", "priority", "redelivered", "seq", "stored")

    def __init__(
        self,
        seq: int,
        message: Message,
        redelivered: bool = False,
        priority: int = 0,
        expires_at: float = 0.0,
    ) -> None:
        self.seq = seq
        self.message = message
        self.redelivered = redelivered
        self.stored = False  # in the queue's store: acks and deliveries are recorded there
        self.priority = priority
        self.expires_at = expires_at  # monotonic seconds; 0 when the message does not expire

    def __lt__(self, other: QueueEntry) -> bool:
        """Delivery order: higher priority first, then the order of arrival."""
        if self.priority != other.priority:
            return self.priority > other.priority
        return self.seq < other.seq
