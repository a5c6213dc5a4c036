"""The pure parts of streams: the x-stream-offset header splice, max-age parsing, retention's
choice of segments, and stream records in the store."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from leveret.amqp.fields import decode_table
from leveret.amqp.properties import BasicProperties, decode_properties, encode_header_payload
from leveret.message import Message
from leveret.queues.classic import Consumer
from leveret.queues.entry import QueueEntry
from leveret.queues.stream import StreamQueue
from leveret.queues.stream_header import with_stream_offset
from leveret.queues.stream_retention import Retention, resolve_retention, segments_to_drop
from leveret.store import GroupCommitter, QueueStore, SegmentSpan
from leveret.stream_limits import AgeUnparsable, parse_max_age


def _header(**properties: object) -> bytes:
    return encode_header_payload(60, 5, BasicProperties(**properties).encode())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "properties",
    [
        {},
        {"content_type": "text/plain"},
        {"content_type": "a", "content_encoding": "gzip", "headers": {"n": 1, "s": "x"}},
        {"headers": {}, "priority": 3, "message_id": "id-1", "delivery_mode": 2},
    ],
)
def test_the_offset_joins_the_headers_and_the_rest_is_kept(properties: dict) -> None:
    original = _header(**properties)
    spliced = decode_properties(with_stream_offset(original, 1 << 40))
    before = decode_properties(original)
    assert spliced.headers == {**(before.headers or {}), "x-stream-offset": 1 << 40}
    for name in ("content_type", "content_encoding", "priority", "message_id", "delivery_mode"):
        assert getattr(spliced, name) == getattr(before, name)


def test_the_offset_is_a_signed_long_on_the_wire() -> None:
    spliced = with_stream_offset(_header(), 7)
    table_start = 14
    raw = spliced[table_start:]
    assert raw[4:] == b"\x0fx-stream-offsetl" + (7).to_bytes(8, "big")
    assert decode_table(raw, 0)[0] == {"x-stream-offset": 7}


def test_max_age_units_are_rabbitmqs() -> None:
    assert parse_max_age("7D") == 7 * 86_400_000
    assert parse_max_age("12h") == 12 * 3_600_000
    assert parse_max_age("30m") == 30 * 60_000
    assert parse_max_age("10s") == 10_000
    assert parse_max_age("1Y") == 365 * 86_400_000
    assert parse_max_age("2M") == 60 * 86_400_000
    for invalid in ("0D", "10x", "5", "1d"):
        assert parse_max_age(invalid) is None
    with pytest.raises(AgeUnparsable):
        parse_max_age("D")


def test_policies_win_over_arguments_for_streams() -> None:
    arguments = {"x-max-length-bytes": 100, "x-max-age": "1D"}
    assert resolve_retention(arguments) == Retention(100, 86_400_000)
    assert resolve_retention(arguments, {"max-length-bytes": 500, "max-age": "1h"}) == Retention(
        500, 3_600_000
    )
    assert resolve_retention(arguments, {"max-length-bytes": 500}, {"max-length-bytes": 50}) == (
        Retention(50, 86_400_000)
    )


def test_retention_keeps_the_segment_being_written() -> None:
    spans = [SegmentSpan(i, i * 10 + 1, i * 10 + 10, 1000) for i in range(1, 5)]
    began = {1: 1_000, 2: 2_000, 3: 3_000, 4: 4_000}
    assert segments_to_drop(spans, began, Retention(max_bytes=2500), 5_000) == 2
    assert segments_to_drop(spans, began, Retention(max_bytes=0), 5_000) == 3
    assert segments_to_drop(spans, began, Retention(max_age_ms=2_500), 5_000) == 1
    assert segments_to_drop(spans, began, Retention(max_age_ms=10), 5_000) == 3
    assert segments_to_drop(spans, began, Retention(), 5_000) == 0


def test_stream_records_keep_their_time_and_are_found_by_seq(tmp_path: Path) -> None:
    store = QueueStore.open(str(tmp_path / "log"), segment_size=300)
    for seq in range(1, 21):
        store.append(seq, "", "rk", _header(), b"body%d" % seq, timestamp=1000 + seq)
    store.sync()
    assert len(store.spans()) > 2
    for seq in (1, 7, 20):
        message = store.read_messages(store.locate(seq), 1).messages[0]
        assert (message.seq, message.timestamp, message.body) == (seq, 1000 + seq, b"body%d" % seq)
    dropped = store.drop_oldest_segment()
    assert dropped is not None and dropped.first_seq == 1
    store.close()
    reopened = QueueStore.open(str(tmp_path / "log"), segment_size=300)
    assert reopened.spans()[0].first_seq == dropped.last_seq + 1
    assert reopened.next_seq == 21
    assert reopened.read_messages(None, 1).messages[0].timestamp == 1000 + dropped.last_seq + 1
    reopened.close()


class _Sink:
    """A channel that takes every delivery and records its offset."""

    def __init__(self) -> None:
        self.offsets: list[int] = []
        self.cancelled = False

    def can_deliver(self) -> bool:
        return True

    def write_blocked(self) -> bool:
        return False

    def deliver(self, consumer: Consumer, queue: object, entry: QueueEntry) -> None:
        self.offsets.append(decode_properties(entry.message.header).headers["x-stream-offset"])

    def consumer_cancelled_by_node(self, consumer: Consumer) -> None:
        self.cancelled = True


def test_consumers_get_messages_only_once_they_are_on_disk(tmp_path: Path) -> None:
    async def scenario() -> tuple[list[int], list[int]]:
        committer = GroupCommitter()
        store = QueueStore.open(str(tmp_path / "stream"), committer=committer)
        stream = StreamQueue(
            "s",
            "/",
            arguments={"x-queue-type": "stream"},
            store=store,
            timers=asyncio.get_running_loop(),
        )
        sink = _Sink()
        consumer = Consumer(
            "tag",
            sink,
            stream,
            no_ack=False,
            exclusive=False,
            priority=0,
            prefetch=100,
            arguments={"x-stream-offset": "first"},
        )
        stream.add_consumer(consumer)
        for number in range(5):
            stream.deliver(Message("", "s", _header(), b"m%d" % number))
        before = list(sink.offsets)
        await committer.wait_durable()
        for _ in range(3):  # the stream hears of the fsync on a later turn of the loop
            await asyncio.sleep(0)
        after = list(sink.offsets)
        stream.delete()
        assert sink.cancelled
        await committer.close()
        return before, after

    before, after = asyncio.run(scenario())
    assert before == []
    assert after == [0, 1, 2, 3, 4]
