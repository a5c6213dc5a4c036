"""A home node's deliveries made into queue entries on the client's node (down_entries.py)."""

from __future__ import annotations

import pytest

from cluster.frames import FrameError
from leveret.clustering.down_entries import entries_by_consumer, framed_entries
from leveret.queues.entry import FramedEntry
from proto import queues_pb2


def test_framed_deliveries_keep_their_order_ids_and_redelivered_positions() -> None:
    batch = queues_pb2.FramedDeliveries(
        consumer=3,
        ids=[7, 8, 0],  # (0: delivered without acknowledgement)
        redelivered=[1],
        exchange_and_keys=[b"\x00\x01q"] * 3,
        framed=[b"one", b"two", b"three"],
    )
    entries = framed_entries(batch)
    assert all(type(entry) is FramedEntry for entry in entries)
    assert [(entry.seq, entry.redelivered) for entry in entries] == [
        (7, False),
        (8, True),
        (0, False),
    ]
    assert [entry.framed for entry in entries] == [b"one", b"two", b"three"]


@pytest.mark.parametrize(
    ("columns", "reason"),
    [
        ({"ids": [1, 2], "exchange_and_keys": [b"k"], "framed": [b"a", b"b"]}, "differ in length"),
        ({"ids": [1], "exchange_and_keys": [b"k"], "framed": [b"a", b"b"]}, "differ in length"),
        (
            {"ids": [1], "exchange_and_keys": [b"k"], "framed": [b"a"], "redelivered": [1]},
            "redelivered position past",
        ),
    ],
)
def test_framed_deliveries_whose_columns_disagree_are_a_malformed_frame(
    columns: dict[str, list[object]], reason: str
) -> None:
    with pytest.raises(FrameError, match=reason):
        framed_entries(queues_pb2.FramedDeliveries(consumer=1, **columns))


def test_unframed_deliveries_go_by_consumer_in_order() -> None:
    header = b"\x00\x3c\x00\x00" + bytes(8) + b"\x00\x00"
    frame = queues_pb2.Down(
        deliveries=[
            queues_pb2.Delivery(consumer=consumer, id=number, header=header, body=b"%d" % number)
            for number, consumer in enumerate([1, 2, 1], start=1)
        ]
    )
    grouped = entries_by_consumer(frame.deliveries)
    assert {
        consumer: [entry.seq for entry in entries] for consumer, entries in grouped.items()
    } == {
        1: [1, 3],
        2: [2],
    }
    assert [entry.message.body for entry in grouped[1]] == [b"1", b"3"]
