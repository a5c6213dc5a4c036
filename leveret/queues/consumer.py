"""A consumer of a queue, and what a queue needs from the channel it belongs to."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from ..amqp.frames import shortstr

if TYPE_CHECKING:
    from .classic import ClassicQueue
    from .entry import QueueEntry


class DeliverySink(Protocol):
    """The channel side of a consumer: whether it can take more, and taking a message."""

    def can_deliver(self) -> bool: ...

    def write_blocked(self) -> bool: ...

    def deliver(self, consumer: Consumer, queue: ClassicQueue, entry: QueueEntry) -> None: ...

    def consumer_cancelled_by_node(self, consumer: Consumer) -> None: ...


class Consumer:
    __slots__ = (
        "arguments",
        "exclusive",
        "in_flight",
        "no_ack",
        "prefetch",
        "priority",
        "queue",
        "sink",
        "tag",
        "tag_bytes",
    )

    def __init__(
        self,
        tag: str,
        sink: DeliverySink,
        queue: ClassicQueue,
        *,
        no_ack: bool,
        exclusive: bool,
        priority: int,
        prefetch: int,
        arguments: dict[str, Any],
    ) -> None:
        self.tag = tag
        self.tag_bytes = shortstr(tag)
        self.sink = sink
        self.queue = queue
        self.no_ack = no_ack
        self.exclusive = exclusive
        self.priority = priority
        self.prefetch = prefetch  # 0 means no per-consumer limit
        self.in_flight = 0
        self.arguments = arguments

    def has_capacity(self) -> bool:
        if self.prefetch and self.in_flight >= self.prefetch and not self.no_ack:
            return False
        return self.sink.can_deliver()

    @property
    def active(self) -> bool:
        """Not blocked by its prefetch limit: what demand-driven federation looks at."""
        return not self.prefetch or self.no_ack or self.in_flight < self.prefetch
