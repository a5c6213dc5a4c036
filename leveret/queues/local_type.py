"""A queue of this node as a channel uses it: every operation answers at once."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..amqp.errors import access_refused
from .classic import Consumer

if TYPE_CHECKING:
    from .classic import ClassicQueue, DeliverySink
    from .entry import QueueEntry
    from .queue_type import Pending, Settles


class LocalQueueClient:
    """The QueueClient of a ClassicQueue (see queue_type.py)."""

    __slots__ = ("_method", "queue")

    def __init__(self, queue: ClassicQueue, method: tuple[int, int]) -> None:
        self.queue = queue
        self._method = method  # the AMQP method its refusals name

    @property
    def name(self) -> str:
        return self.queue.name

    @property
    def stream(self) -> bool:
        return self.queue.stream

    def status(self, then: Callable[[int, int], None]) -> Pending:
        queue = self.queue
        queue.touch()  # a passive declare renews an x-expires lease too
        then(queue.message_count, queue.consumer_count)
        return None

    def purge(self, then: Callable[[int], None]) -> Pending:
        then(self.queue.purge())
        return None

    def get(self, no_ack: bool, then: Callable[[Settles, QueueEntry | None, int], None]) -> Pending:
        queue = self.queue
        entry = queue.get(no_ack)
        then(queue, entry, queue.message_count)
        return None

    def check_consume(self, exclusive: bool) -> None:
        queue = self.queue
        if queue.stream:
            return  # exclusive consumers do not exclude others from a stream
        if queue.has_exclusive_consumer() or (exclusive and queue.consumer_count):
            raise access_refused(
                f"queue '{queue.name}' in vhost '{queue.vhost}' in exclusive use", self._method
            )

    def consume(
        self,
        sink: DeliverySink,
        tag: str,
        *,
        no_ack: bool,
        exclusive: bool,
        priority: int,
        prefetch: int,
        limit: int,
        arguments: dict[str, Any],
        then: Callable[[Consumer], None],
    ) -> Pending:
        consumer = Consumer(
            tag,
            sink,
            self.queue,
            no_ack=no_ack,
            exclusive=exclusive,
            priority=priority,
            prefetch=prefetch,
            arguments=arguments,
        )
        then(consumer)
        self.queue.add_consumer(consumer)
        return None
