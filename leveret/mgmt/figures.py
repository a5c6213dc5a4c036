"""The numbers the API and metrics show, read from the node's model in one place.

Everything that reaches into queues for counts lives here, so the rest of the management layer
deals in plain frozen figures. Where the core does not count something (basic.get separately from
deliveries), this module derives it as described at each function.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields
from operator import attrgetter
from typing import TYPE_CHECKING

from ..queues.classic import ClassicQueue

if TYPE_CHECKING:
    from ..broker import Broker


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


class QueueReader:
    """Figures of a broker's queues, from each queue's own counters: a reading never walks a
    queue's messages or the channels' unacknowledged deliveries, however many there are."""

    def read(self, broker: Broker) -> dict[ClassicQueue, QueueFigures]:
        return {
            queue: self._figures(queue)
            for vhost in broker.vhosts.values()
            for queue in vhost.queues.values()
        }

    def read_some(self, queues: list[ClassicQueue]) -> dict[ClassicQueue, QueueFigures]:
        """The figures of `queues` alone."""
        return {queue: self._figures(queue) for queue in queues}

    def counts(self, queues: Iterable[ClassicQueue]) -> QueueFigures:
        """The sum of `queues`' figures without their byte and persistence fields (left 0):
        what the overview shows, for a fraction of the cost of reading each queue's figures."""
        ready = unacked = publish = delivered = deliver = 0
        no_ack_deliveries = gets = no_ack_gets = get_empty = ack = redeliver = 0
        for queue in queues:
            ready += queue.message_count
            unacked += queue.unacked
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

    def read_one(self, queue: ClassicQueue) -> QueueFigures:
        """One queue's figures."""
        return self._figures(queue)

    def _figures(self, queue: ClassicQueue) -> QueueFigures:
        delivered = queue.delivered_total
        gets = _counter(queue, "get_total")
        no_ack_deliveries = _counter(queue, "deliver_no_ack_total")
        no_ack_gets = _counter(queue, "get_no_ack_total")
        return QueueFigures(
            ready=queue.message_count,
            ready_in_memory=getattr(queue, "in_memory_count", queue.message_count),
            # The queue counts deliveries to consumers on any node and basic.get's alike.
            unacked=queue.unacked,
            ready_bytes=queue.ready_bytes,
            unacked_bytes=queue.unacked_bytes,
            persistent=queue.ready_persistent + queue.unacked_persistent,
            persistent_bytes=queue.ready_persistent_bytes + queue.unacked_persistent_bytes,
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
