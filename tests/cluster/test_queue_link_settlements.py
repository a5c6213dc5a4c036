"""When a link's settlements go: those a client's read brought, as soon as the read is handled
(ahead of the rest of the loop's turn), the other frames at the end of the turn; settlements
made outside a read go with the rest, in one write."""

from __future__ import annotations

import asyncio

from cluster.data_connection import DataConnection
from leveret.clustering.queue_link import QueueLink
from leveret.message import Message
from leveret.pending_writes import PendingWrites
from leveret.queues.remote import Outcome
from proto import queues_pb2


class RecordingConnection:
    """A data connection that keeps what the link writes."""

    can_write = True

    def __init__(self) -> None:
        self.writes: list[queues_pb2.ToHome] = []
        self._closed = asyncio.get_running_loop().create_future()

    def write(self, data: bytes) -> None:
        self.writes.append(queues_pb2.ToHome.FromString(data))

    async def wait_closed(self) -> None:
        await self._closed

    def close(self) -> None:
        if not self._closed.done():
            self._closed.set_result(None)


async def _connected_link(pending: PendingWrites) -> tuple[QueueLink, RecordingConnection]:
    connection = RecordingConnection()
    connected = asyncio.Event()

    async def open_data(node: str, address: str, link: QueueLink) -> DataConnection:
        connected.set()
        return connection  # type: ignore[return-value]

    link = QueueLink(
        "home@node", lambda node: "127.0.0.1:1", open_data, lambda: 0, after_read=pending.after_read
    )
    assert link.up  # the first use starts the link
    await asyncio.wait_for(connected.wait(), 5)
    await asyncio.sleep(0)  # (the link takes the connection)
    return link, connection


def _settled(batch: queues_pb2.ToHome) -> list[tuple[int, list[int]]]:
    return [(s.outcome, list(s.deliveries)) for up in batch.up for s in up.settles]


def _published(batch: queues_pb2.ToHome) -> list[bytes]:
    return [p.body for up in batch.up for p in up.publishes]


async def _turn_ended() -> None:
    for _ in range(3):
        await asyncio.sleep(0)


def test_settlements_from_a_read_go_before_the_end_of_the_turn() -> None:
    async def scenario() -> None:
        pending = PendingWrites()
        link, connection = await _connected_link(pending)
        # One read of a client's: two acks and a requeue, and a publish.
        link.settle(Outcome.ACK, [1])
        link.settle(Outcome.ACK, [2])
        link.settle(Outcome.REQUEUE, [3])
        link.publish("/", ["q"], Message("", "q", b"", b"later"), None, 0)
        pending.read_handled()
        assert len(connection.writes) == 1
        (control,) = connection.writes
        assert _settled(control) == [(Outcome.ACK, [1, 2]), (Outcome.REQUEUE, [3])]
        assert _published(control) == []
        await _turn_ended()
        assert len(connection.writes) == 2
        assert _settled(connection.writes[1]) == []
        assert _published(connection.writes[1]) == [b"later"]
        # A read that settled nothing writes nothing.
        pending.read_handled()
        assert len(connection.writes) == 2
        await link.close()

    asyncio.run(scenario())


def test_settlements_outside_a_read_go_with_the_turn() -> None:
    async def scenario() -> None:
        pending = PendingWrites()
        link, connection = await _connected_link(pending)
        link.settle(Outcome.REJECT, [7])  # (a consumer timeout, a channel closing)
        link.publish("/", ["q"], Message("", "q", b"", b"with it"), None, 0)
        await _turn_ended()
        assert len(connection.writes) == 1
        assert _settled(connection.writes[0]) == [(Outcome.REJECT, [7])]
        assert _published(connection.writes[0]) == [b"with it"]
        # The read after it finds nothing left to send; the next settlement is sent at once.
        pending.read_handled()
        assert len(connection.writes) == 1
        link.settle(Outcome.ACK, [8])
        pending.read_handled()
        assert len(connection.writes) == 2
        assert _settled(connection.writes[1]) == [(Outcome.ACK, [8])]
        await link.close()

    asyncio.run(scenario())
