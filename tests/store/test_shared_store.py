"""The shared body store: a fanout writes a body once, reference counts survive restarts, files
go when nothing points into them, and a missing file drops only its messages, with a log."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from leveret.store import BodyRef, BodyUnavailable, QueueStore, SharedStore


def _bodies_on_disk(directory: Path) -> int:
    return sum(
        entry.stat().st_size for entry in directory.iterdir() if entry.name.endswith(".bodies")
    )


def _open_vhost(
    root: Path, queues: int, file_size: int = 16 * 1024 * 1024
) -> tuple[SharedStore, list[QueueStore]]:
    shared = SharedStore(str(root / "bodies"), file_size=file_size)
    stores = [QueueStore.open(str(root / f"q{index}"), shared=shared) for index in range(queues)]
    shared.collect_garbage()
    return shared, stores


def _close(shared: SharedStore, stores: list[QueueStore]) -> None:
    for store in stores:
        store.close()
    shared.close()


def test_small_bodies_are_embedded_and_large_ones_shared(tmp_path: Path) -> None:
    shared = SharedStore(str(tmp_path), embed_threshold=100)
    assert shared.share(b"x" * 99) == b"x" * 99
    reference = shared.share(b"y" * 100)
    assert isinstance(reference, BodyRef)
    assert shared.read(reference) == b"y" * 100
    shared.close()


def test_fanout_writes_the_body_once(tmp_path: Path) -> None:
    shared, stores = _open_vhost(tmp_path, 10)
    body = os.urandom(16 * 1024)
    for seq in range(1, 21):
        stored = shared.share(body)
        for store in stores:
            store.append(seq, "fanout", "", b"header", stored)
    _close(shared, stores)
    on_disk = _bodies_on_disk(tmp_path / "bodies")
    assert 20 * len(body) <= on_disk < 21 * len(body), "each body once, not once per queue"
    queue_bytes = sum(
        entry.stat().st_size for entry in (tmp_path / "q0").iterdir() if entry.name.endswith(".seg")
    )
    assert queue_bytes < 20 * 100, "queues hold references, not bodies"

    shared, stores = _open_vhost(tmp_path, 10)
    for store in stores:
        assert [m.body for m in store.read_messages(None, 100).messages] == [body] * 20
    _close(shared, stores)


def test_a_file_goes_once_every_queue_is_done_with_it(tmp_path: Path) -> None:
    shared = SharedStore(str(tmp_path / "bodies"), file_size=50_000)
    stores = [
        QueueStore.open(str(tmp_path / f"q{index}"), shared=shared, segment_size=40_000)
        for index in range(3)
    ]
    shared.collect_garbage()
    body = b"z" * 10_000
    seq = 0
    for seq in range(1, 41):
        stored = shared.share(body)
        for store in stores:
            store.append(seq, "fanout", "", b"h", stored)
    first_file = tmp_path / "bodies" / "0000000001.bodies"
    for store in stores:
        store.sync()
    shared.sync()
    assert first_file.exists()
    for store in stores[:2]:
        for number in range(1, 41):
            store.ack(number)
    assert first_file.exists(), "the third queue still points into it"
    for number in range(1, 41):
        stores[2].ack(number)
    assert not first_file.exists()
    # Later files are still pinned by the active segments; a restart sorts it out.
    _close(shared, stores)
    shared, stores = _open_vhost(tmp_path, 3, file_size=50_000)
    assert _bodies_on_disk(tmp_path / "bodies") == 0
    assert shared.statistics().references == 0
    _close(shared, stores)


def test_refcounts_are_recovered_and_garbage_collected(tmp_path: Path) -> None:
    shared, stores = _open_vhost(tmp_path, 2, file_size=30_000)
    body = b"b" * 8000
    for seq in range(1, 21):
        stored = shared.share(body)
        stores[0].append(seq, "", "", b"h", stored)
        if seq > 10:
            stores[1].append(seq, "", "", b"h", stored)
    for seq in range(1, 21):
        stores[0].ack(seq)
    _close(shared, stores)
    files_before = sorted(os.listdir(tmp_path / "bodies"))

    shared, stores = _open_vhost(tmp_path, 2, file_size=30_000)
    files_after = sorted(os.listdir(tmp_path / "bodies"))
    assert len(files_after) < len(files_before), "files only queue 0 used are collected"
    assert shared.statistics().references == 10
    assert [m.seq for m in stores[1].read_messages(None, 100).messages] == list(range(11, 21))
    assert stores[0].message_count == 0
    _close(shared, stores)


def test_a_missing_shared_file_drops_its_messages_with_a_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    shared, stores = _open_vhost(tmp_path, 1, file_size=30_000)
    for seq in range(1, 31):
        size = 9000 if seq % 3 == 0 else 100
        stores[0].append(seq, "", "", b"h", shared.share(b"%d;" % seq + b"." * size))
    _close(shared, stores)
    (tmp_path / "bodies" / "0000000001.bodies").unlink()

    with caplog.at_level(logging.ERROR):
        shared, stores = _open_vhost(tmp_path, 1, file_size=30_000)
    assert "missing or truncated" in caplog.text
    seqs = [m.seq for m in stores[0].read_messages(None, 100).messages]
    lost = {3, 6, 9, 12}  # a file rolls over once it has passed 30000 bytes: four bodies
    assert seqs == [seq for seq in range(1, 31) if seq not in lost]
    assert stores[0].message_count == len(seqs)
    _close(shared, stores)


def test_a_body_lost_at_run_time_is_dropped_when_read(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    shared, stores = _open_vhost(tmp_path, 1)
    store = stores[0]
    store.append(1, "", "", b"h", b"small")
    location = store.append(2, "", "", b"h", shared.share(b"L" * 5000))
    store.append(3, "", "", b"h", b"small too")
    _close(shared, stores)
    shared, stores = _open_vhost(tmp_path, 1)
    store = stores[0]
    path = tmp_path / "bodies" / "0000000001.bodies"
    damaged = bytearray(path.read_bytes())
    damaged[-10] ^= 0xFF
    path.write_bytes(bytes(damaged))
    with pytest.raises(BodyUnavailable):
        store.read(location)
    with caplog.at_level(logging.ERROR):
        batch = store.read_messages(None, 10)
    assert [m.seq for m in batch.messages] == [1, 3]
    assert batch.dropped == [2]
    assert store.message_count == 2
    assert "message 2 dropped" in caplog.text
    _close(shared, stores)
