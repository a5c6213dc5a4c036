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


# What a FramedEntry holds as its message: nothing reads it (see FramedEntry).
_NO_MESSAGE = Message("", "", b"", b"")


class FramedEntry(QueueEntry):
    """A delivery from a queue's home node to a consumer here: basic.deliver's exchange and
    routing key as it carries them, and the content header and body frames already made for
    the consumer's channel (queues.proto's FramedDeliveries). Only the channel's delivery reads
    them; its `message` is an empty stand-in, and `seq` names it for settling on the link."""

    __slots__ = ("exchange_and_key", "framed")

    def __init__(self, seq: int, redelivered: bool, exchange_and_key: bytes, framed: bytes) -> None:
        # Every slot set here, not by QueueEntry's constructor: a call less per delivery on the
        # busier node.
        self.seq = seq
        self.message = _NO_MESSAGE
        self.redelivered = redelivered
        self.stored = False
        self.priority = 0
        self.expires_at = 0.0
        self.exchange_and_key = exchange_and_key
        self.framed = framed
