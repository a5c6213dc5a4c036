"""A queue's store: round trip, order, delivered flags across restarts, paging, acks deleting
segments, and recovery from torn or bit-flipped tails."""

from __future__ import annotations

import logging
import os
import random
from pathlib import Path

import pytest

from leveret.store import Location, QueueStore, SharedStore, StoredMessage
from leveret.store.files import FileSystem
from leveret.store.queue_segment import marks_file_name, segment_file_name


def _header(seq: int) -> bytes:
    # Stands in for an AMQP content-header payload; the store keeps it verbatim.
    return b"\x00\x3c\x00\x00" + seq.to_bytes(8, "big") + b"\x90\x00\x02"


def _body(seq: int, size: int = 100) -> bytes:
    return (b"%d:" % seq + bytes(range(256)) * (size // 256 + 1))[:size]


def _fill(store: QueueStore, seqs: range, size: int = 100) -> dict[int, Location]:
    return {
        seq: store.append(seq, "amq.direct", f"key.{seq}", _header(seq), _body(seq, size))
        for seq in seqs
    }


def _check(message: StoredMessage, size: int = 100) -> None:
    assert message.exchange == "amq.direct"
    assert message.routing_key == f"key.{message.seq}"
    assert message.header_payload == _header(message.seq)
    assert message.body == _body(message.seq, size)


def _all(store: QueueStore) -> list[StoredMessage]:
    return store.read_messages(None, 10**9).messages


def test_round_trip_in_order_across_a_restart(tmp_path: Path) -> None:
    store = QueueStore.open(str(tmp_path))
    locations = _fill(store, range(1, 501))
    for location in locations.values():
        _check(store.read(location))
    store.close()

    store = QueueStore.open(str(tmp_path))
    assert store.message_count == 500
    assert store.next_seq == 501
    messages = _all(store)
    assert [message.seq for message in messages] == list(range(1, 501))
    for message in messages:
        _check(message)
        assert not message.redelivered and message.persistent
    entries = list(store.recover())
    assert [entry.seq for entry in entries] == list(range(1, 501))
    assert all(entry.body_size == 100 for entry in entries)
    assert store.read(entries[7].location).body == _body(8)
    with pytest.raises(ValueError):
        store.append(500, "", "", b"", b"")
    store.close()


def test_delivered_and_acked_marks_survive_a_restart(tmp_path: Path) -> None:
    store = QueueStore.open(str(tmp_path))
    _fill(store, range(1, 11))
    for seq in (1, 2, 3, 4):
        assert store.mark_delivered(seq)
    for seq in (2, 4, 6):
        assert store.ack(seq)
    assert not store.ack(6), "a second ack is not counted"
    assert not store.ack(99)
    store.close()

    store = QueueStore.open(str(tmp_path))
    assert [(m.seq, m.redelivered) for m in _all(store)] == [
        (1, True),
        (3, True),
        (5, False),
        (7, False),
        (8, False),
        (9, False),
        (10, False),
    ]
    assert store.message_count == 7
    assert [(e.seq, e.redelivered) for e in store.recover()][:2] == [(1, True), (3, True)]
    store.close()


def test_transient_messages_are_dropped_at_boot(tmp_path: Path) -> None:
    store = QueueStore.open(str(tmp_path))
    for seq in range(1, 21):
        store.append(
            seq, "amq.direct", f"key.{seq}", _header(seq), _body(seq), persistent=bool(seq % 2)
        )
    assert [m.persistent for m in _all(store)][:2] == [True, False]
    store.close()
    store = QueueStore.open(str(tmp_path))
    assert [m.seq for m in _all(store)] == list(range(1, 21, 2))
    assert store.next_seq == 21
    store.close()


def test_paging_with_a_cursor_sees_every_message_once(tmp_path: Path) -> None:
    store = QueueStore.open(str(tmp_path), segment_size=20_000)
    _fill(store, range(1, 2001))
    randomness = random.Random(7)
    seen: list[int] = []
    cursor = None
    for _ in range(1000):
        batch = store.read_messages(cursor, 97)
        if not batch.messages:
            break
        cursor = batch.cursor
        for message in batch.messages:
            _check(message)
            seen.append(message.seq)
            if randomness.random() < 0.7:
                store.ack(message.seq)
    assert seen == list(range(1, 2001))
    assert store.statistics().segments > 5
    store.close()


def test_read_messages_respects_max_bytes(tmp_path: Path) -> None:
    store = QueueStore.open(str(tmp_path))
    _fill(store, range(1, 101), size=1000)
    batch = store.read_messages(None, 100, max_bytes=10_000)
    assert len(batch.messages) == 10
    store.close()


def test_fully_acked_segments_are_deleted(tmp_path: Path) -> None:
    store = QueueStore.open(str(tmp_path), segment_size=10_000)
    _fill(store, range(1, 1001))
    segments_before = store.statistics().segments
    assert segments_before >= 10
    order = list(range(1, 1001))
    random.Random(3).shuffle(order)
    for seq in order[:500]:
        store.ack(seq)
    store.sync()
    for seq in sorted(order[500:]):
        store.ack(seq)
    store.sync()
    files = sorted(os.listdir(tmp_path))
    # Only the active segment (which is never deleted under the writer) may remain.
    assert len([name for name in files if name.endswith(".seg")]) <= 1
    assert store.message_count == 0
    store.close()
    store = QueueStore.open(str(tmp_path))
    assert store.message_count == 0
    assert [name for name in os.listdir(tmp_path) if name.endswith(".seg")] == []
    store.close()


def test_segment_rollover_and_restart_keep_order(tmp_path: Path) -> None:
    store = QueueStore.open(str(tmp_path), segment_size=5_000)
    _fill(store, range(1, 301))
    store.close()
    store = QueueStore.open(str(tmp_path), segment_size=5_000)
    _fill(store, range(301, 401))
    store.close()
    store = QueueStore.open(str(tmp_path))
    assert [m.seq for m in _all(store)] == list(range(1, 401))
    store.close()


def _last_record_offset(path: Path) -> int:
    store = QueueStore.open(str(path.parent))
    last = list(store.recover())[-1].location.offset
    store.close()
    return last


def test_torn_tail_at_every_byte_of_the_last_record(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    original = tmp_path / "original"
    store = QueueStore.open(str(original))
    _fill(store, range(1, 6))
    store.close()
    segment = original / segment_file_name(1)
    data = segment.read_bytes()
    last = _last_record_offset(segment)
    for cut in range(last, len(data)):
        directory = tmp_path / f"cut{cut}"
        directory.mkdir()
        (directory / segment_file_name(1)).write_bytes(data[:cut])
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            store = QueueStore.open(str(directory))
        assert [m.seq for m in _all(store)] == [1, 2, 3, 4], cut
        if cut > last:
            assert "torn or corrupt" in caplog.text, cut
        assert (directory / segment_file_name(1)).stat().st_size == last
        store.append(6, "amq.direct", "key.6", _header(6), _body(6))
        store.close()
        store = QueueStore.open(str(directory))
        assert [m.seq for m in _all(store)] == [1, 2, 3, 4, 6]
        store.close()


def test_bit_flips_in_the_tail(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    original = tmp_path / "original"
    store = QueueStore.open(str(original))
    _fill(store, range(1, 6))
    store.close()
    data = (original / segment_file_name(1)).read_bytes()
    last = _last_record_offset(original / segment_file_name(1))
    randomness = random.Random(11)
    for trial in range(60):
        position = randomness.randrange(last, len(data))
        damaged = bytearray(data)
        damaged[position] ^= 1 << randomness.randrange(8)
        directory = tmp_path / f"flip{trial}"
        directory.mkdir()
        (directory / segment_file_name(1)).write_bytes(bytes(damaged))
        with caplog.at_level(logging.WARNING):
            store = QueueStore.open(str(directory))
        assert [m.seq for m in _all(store)] == [1, 2, 3, 4]
        store.close()


def test_a_corrupt_record_in_the_middle_loses_only_that_message(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = QueueStore.open(str(tmp_path))
    locations = _fill(store, range(1, 6))
    store.close()
    path = tmp_path / segment_file_name(1)
    damaged = bytearray(path.read_bytes())
    damaged[locations[3].offset + 20] ^= 0x01
    path.write_bytes(bytes(damaged))
    with caplog.at_level(logging.ERROR):
        store = QueueStore.open(str(tmp_path))
    assert [m.seq for m in _all(store)] == [1, 2, 4, 5]
    assert "corrupt record" in caplog.text
    store.close()


def test_a_torn_mark_log_keeps_the_marks_before_the_tear(tmp_path: Path) -> None:
    store = QueueStore.open(str(tmp_path))
    _fill(store, range(1, 11))
    store.ack(1)
    store.sync()
    store.ack(2)
    store.close()
    marks = tmp_path / marks_file_name(1)
    data = marks.read_bytes()
    marks.write_bytes(data[:-3])
    store = QueueStore.open(str(tmp_path))
    # The ack of 1 was durable; the ack of 2 was torn, so 2 comes back (acks are lazy).
    assert [m.seq for m in _all(store)][:2] == [2, 3]
    store.ack(3)
    store.close()
    store = QueueStore.open(str(tmp_path))
    assert [m.seq for m in _all(store)][:2] == [2, 4]
    store.close()


def test_a_segment_torn_at_creation_is_removed(tmp_path: Path) -> None:
    store = QueueStore.open(str(tmp_path), segment_size=2_000)
    _fill(store, range(1, 51))
    store.close()
    names = sorted(name for name in os.listdir(tmp_path) if name.endswith(".seg"))
    (tmp_path / names[-1]).write_bytes(b"LV")
    store = QueueStore.open(str(tmp_path))
    seqs = [m.seq for m in _all(store)]
    assert seqs == list(range(1, len(seqs) + 1)) and 0 < len(seqs) < 50
    assert not (tmp_path / names[-1]).exists()
    store.close()


def test_purge_and_delete(tmp_path: Path) -> None:
    shared = SharedStore(str(tmp_path / "bodies"))
    store = QueueStore.open(str(tmp_path / "q"), shared=shared, segment_size=5_000)
    for seq in range(1, 101):
        store.append(seq, "", "k", b"h", _body(seq, 5000 if seq % 10 == 0 else 50))
    assert store.purge() == 100
    assert store.message_count == 0 and _all(store) == []
    assert shared.statistics().references == 0
    store.append(200, "", "k", b"h", b"after purge")
    store.close()
    store = QueueStore.open(str(tmp_path / "q"), shared=shared)
    assert [m.body for m in _all(store)] == [b"after purge"]
    store.delete()
    assert not (tmp_path / "q").exists()


def test_empty_store_and_header_only_segment(tmp_path: Path) -> None:
    store = QueueStore.open(str(tmp_path))
    assert store.message_count == 0 and store.next_seq == 1
    assert store.read_messages(None, 10).messages == []
    assert list(store.recover()) == []
    store.close()
    store = QueueStore.open(str(tmp_path))
    assert store.message_count == 0
    store.close()


def test_sparse_seqs_roll_over_instead_of_growing_bitmaps(tmp_path: Path) -> None:
    store = QueueStore.open(str(tmp_path))
    seqs = [1, 2, 10**9, 10**9 + 1, 10**12]
    for seq in seqs:
        store.append(seq, "", "", b"h", b"sparse")
    statistics = store.statistics()
    assert statistics.segments == 3
    assert statistics.index_memory_bytes < 10_000
    store.ack(10**9)
    store.close()
    store = QueueStore.open(str(tmp_path))
    assert [m.seq for m in _all(store)] == [1, 2, 10**9 + 1, 10**12]
    store.close()


class _DirectorySyncs(FileSystem):
    """Records which directories were fsynced, in order."""

    def __init__(self) -> None:
        self.synced: list[str] = []

    def sync_directory(self, path: str) -> None:
        super().sync_directory(path)
        self.synced.append(path)


def test_a_new_queue_directory_is_made_durable_by_its_first_fsync(tmp_path: Path) -> None:
    # Opening (declaring the queue) leaves the disk alone; the first fsync makes the segment's
    # entry and the queue directory's own entry durable, before anything is confirmed.
    fs = _DirectorySyncs()
    directory = tmp_path / "queues" / "q1"
    store = QueueStore.open(str(directory), fs=fs)
    assert directory.is_dir()
    assert fs.synced == [str(tmp_path)]  # only the missing "queues" level, made at once
    _fill(store, range(1, 3))
    store.sync()
    assert fs.synced[1:] == [str(directory), str(tmp_path / "queues")]
    _fill(store, range(3, 5))
    store.sync()
    assert len(fs.synced) == 3
    store.close()
