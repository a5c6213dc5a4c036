"""A home node's deliveries, as a Down frame carries them, made into this node's queue entries."""

from __future__ import annotations

from typing import Any

from cluster.frames import FrameError
from proto import queues_pb2

from ..message import Message
from ..queues.entry import FramedEntry, QueueEntry


def delivered_entry(delivery: queues_pb2.Delivery) -> QueueEntry:
    """An unframed delivery (to a consumer that named no channel, or a get's)."""
    message = Message(delivery.exchange, delivery.routing_key, delivery.header, delivery.body)
    return QueueEntry(delivery.id, message, delivery.redelivered)


def entries_by_consumer(deliveries: Any) -> dict[int, list[QueueEntry]]:
    """A frame's unframed deliveries, each consumer's together, in order (mostly a frame's are
    all one consumer's)."""
    first = deliveries[0].consumer
    if all(delivery.consumer == first for delivery in deliveries):
        return {first: [delivered_entry(delivery) for delivery in deliveries]}
    by_consumer: dict[int, list[QueueEntry]] = {}
    for delivery in deliveries:
        by_consumer.setdefault(delivery.consumer, []).append(delivered_entry(delivery))
    return by_consumer


def framed_entries(batch: queues_pb2.FramedDeliveries) -> list[QueueEntry]:
    """One consumer's framed deliveries, in order. Columns that disagree end the connection,
    as any malformed frame does (FrameError)."""
    ids = batch.ids
    count = len(ids)
    if len(batch.exchange_and_keys) != count or len(batch.framed) != count:
        raise FrameError("framed deliveries whose columns differ in length")
    if batch.redelivered and max(batch.redelivered) >= count:
        raise FrameError("a redelivered position past the framed deliveries")
    entries: list[QueueEntry] = [
        FramedEntry(delivery_id, False, exchange_and_key, framed)
        for delivery_id, exchange_and_key, framed in zip(
            ids,
            batch.exchange_and_keys,
            batch.framed,
            strict=True,  # (checked above)
        )
    ]
    for position in batch.redelivered:
        entries[position].redelivered = True
    return entries
