"""The numbers the API and metrics show, read from the node's model in one place.

Everything that reaches into queues, channels and sessions for counts lives here, so the rest of
the management layer deals in plain frozen figures. Where the core does not count something
(unacknowledged messages' bytes, basic.get separately from deliveries), this module derives it as
described at each function.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields
from operator import attrgetter
from typing import TYPE_CHECKING

from ..queues.classic import ClassicQueue
from ..session import open_sessions

if TYPE_CHECKING:
    from ..broker import Broker
    from ..message import Message


@dataclass(frozen=True, slots=True)
class QueueFigures:
    ready: int = 0
    unacked: int = 0
    ready_in_memory: int = 0
    ready_bytes: int = 0
    unacked_bytes: int = 0
    persistent: int = 0
    persistent_bytes: int = 0
    # Totals since the queue was created.
    publish: int = 0
    deliver_get: int = 0
    deliver: int = 0
    deliver_no_ack: int = 0
    get: int = 0
    get_no_ack: int = 0
    get_empty: int = 0
    ack: int = 0
    redeliver: int = 0

    @property
    def messages(self) -> int:
        return self.ready + self.unacked

    @property
    def message_bytes(self) -> int:
        return self.ready_bytes + self.unacked_bytes

    def totals(self) -> dict[str, int]:
        """The message_stats counters, by RabbitMQ's names."""
        return {
            "publish": self.publish,
            "deliver_get": self.deliver_get,
            "deliver": self.deliver,
            "deliver_no_ack": self.deliver_no_ack,
            "get": self.get,
            "get_no_ack": self.get_no_ack,
            "get_empty": self.get_empty,
            "ack": self.ack,
            "redeliver": self.redeliver,
        }

    def plus(self, other: QueueFigures) -> QueueFigures:
        return QueueFigures(*(a + b for a, b in zip(_astuple(self), _astuple(other), strict=True)))


_FIELD_NAMES = tuple(field.name for field in fields(QueueFigures))
_astuple: Callable[[QueueFigures], tuple[int, ...]] = attrgetter(*_FIELD_NAMES)


ZERO = QueueFigures()


def _counter(queue: ClassicQueue, name: str) -> int:
    """A queue counter the core may not keep yet (then 0)."""
    value = getattr(queue, name, 0)
    return value if isinstance(value, int) else 0


@dataclass(slots=True)
class _Held:
    count: int = 0
    size: int = 0
    persistent: int = 0
    persistent_bytes: int = 0

    def add(self, message: Message) -> None:
        self.count += 1
        size = len(message.body)
        self.size += size
        if message.persistent:
            self.persistent += 1
            self.persistent_bytes += size


class QueueReader:
    """Figures for every queue of a broker, computed together (one pass over the channels).

    Ready messages' bytes and persistence are the queue's own counters: a reading never walks
    a queue's messages, however many it holds.
    """

    def read(self, broker: Broker) -> dict[ClassicQueue, QueueFigures]:
        unacked = self._unacked_by_queue(broker)
        figures: dict[ClassicQueue, QueueFigures] = {}
        for vhost in broker.vhosts.values():
            for queue in vhost.queues.values():
                figures[queue] = self._figures(queue, unacked.get(queue))
        return figures

    def read_some(
        self, broker: Broker, queues: list[ClassicQueue]
    ) -> dict[ClassicQueue, QueueFigures]:
        """The figures of `queues` alone (the channels are walked once for all of them)."""
        unacked = self._unacked_by_queue(broker)
        return {queue: self._figures(queue, unacked.get(queue)) for queue in queues}

    def counts(self, broker: Broker, queues: Iterable[ClassicQueue]) -> QueueFigures:
        """The sum of `queues`' figures without their byte and persistence fields (left 0):
        what the overview shows, for a fraction of the cost of reading each queue's figures."""
        held = self._unacked_by_queue(broker)
        ready = unacked = publish = delivered = deliver = 0
        no_ack_deliveries = gets = no_ack_gets = get_empty = ack = redeliver = 0
        for queue in queues:
            ready += queue.message_count
            in_channels = held.get(queue)
            own = queue.unacked
            unacked += own if in_channels is None or own >= in_channels.count else in_channels.count
            publish += queue.published_total
            queue_delivered = queue.delivered_total
            queue_gets = _counter(queue, "get_total")
            queue_no_ack_deliveries = _counter(queue, "deliver_no_ack_total")
            queue_no_ack_gets = _counter(queue, "get_no_ack_total")
            delivered += queue_delivered
            deliver += max(
                queue_delivered - queue_gets - queue_no_ack_deliveries - queue_no_ack_gets, 0
            )
            no_ack_deliveries += queue_no_ack_deliveries
            gets += queue_gets
            no_ack_gets += queue_no_ack_gets
            get_empty += _counter(queue, "get_empty_total")
            ack += queue.acked_total
            redeliver += queue.redelivered_total
        return QueueFigures(
            ready=ready,
            unacked=unacked,
            publish=publish,
            deliver_get=delivered,
            deliver=deliver,
            deliver_no_ack=no_ack_deliveries,
            get=gets,
            get_no_ack=no_ack_gets,
            get_empty=get_empty,
            ack=ack,
            redeliver=redeliver,
        )

    def read_one(self, broker: Broker, queue: ClassicQueue) -> QueueFigures:
        """One queue's figures (the channels are still walked for its unacknowledged messages)."""
        return self._figures(queue, self._unacked_by_queue(broker).get(queue))

    def _unacked_by_queue(self, broker: Broker) -> dict[ClassicQueue, _Held]:
        held: dict[ClassicQueue, _Held] = {}
        for session in list(open_sessions(broker)):
            for channel in list(session.channels.values()):
                for queue, entry, _consumer in channel.unacked.values():
                    if not isinstance(queue, ClassicQueue) or queue.stream:
                        # A remote queue's home node counts its unacknowledged ones; a stream
                        # counts every message it keeps as ready (as RabbitMQ's).
                        continue
                    record = held.get(queue)
                    if record is None:
                        record = held[queue] = _Held()
                    record.add(entry.message)
        return held

    def _figures(self, queue: ClassicQueue, unacked: _Held | None) -> QueueFigures:
        unacked = unacked or _Held()
        delivered = queue.delivered_total
        gets = _counter(queue, "get_total")
        no_ack_deliveries = _counter(queue, "deliver_no_ack_total")
        no_ack_gets = _counter(queue, "get_no_ack_total")
        return QueueFigures(
            ready=queue.message_count,
            ready_in_memory=getattr(queue, "in_memory_count", queue.message_count),
            # The queue's own count includes basic.get deliveries not yet acknowledged.
            unacked=max(queue.unacked, unacked.count),
            ready_bytes=queue.ready_bytes,
            unacked_bytes=unacked.size,
            persistent=queue.ready_persistent + unacked.persistent,
            persistent_bytes=queue.ready_persistent_bytes + unacked.persistent_bytes,
            publish=queue.published_total,
            deliver_get=delivered,
            deliver=max(delivered - gets - no_ack_deliveries - no_ack_gets, 0),
            deliver_no_ack=no_ack_deliveries,
            get=gets,
            get_no_ack=no_ack_gets,
            get_empty=_counter(queue, "get_empty_total"),
            ack=queue.acked_total,
            redeliver=queue.redelivered_total,
        )


def total(figures: Iterable[QueueFigures]) -> QueueFigures:
    """The field-by-field sum (one column at a time: a node may have 10,000 queues)."""
    rows = [_astuple(item) for item in figures]
    if not rows:
        return ZERO
    return QueueFigures(*(sum(column) for column in zip(*rows, strict=True)))
