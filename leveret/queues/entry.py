"""A message's place in one queue."""

from __future__ import annotations

from ..message import Message


class QueueEntry:
    """A message in one queue: its sequence number there, and whether it was delivered before."""

    __slots__ = ("seq", "message", "redelivered", "stored")

    def __init__(self, seq: int, message: Message, redelivered: bool = False) -> None:
        self.seq = seq
        self.message = message
        self.redelivered = redelivered
        self.stored = False  # in the queue's store: acks and deliveries are recorded there

    def __lt__(self, other: QueueEntry) -> bool:
        return self.seq < other.seq
