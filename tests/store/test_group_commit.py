"""Group commit: many writes share an fsync, callbacks run only once data is durable, failures
reach the callbacks, and neither ENOSPC, EIO nor power loss damages what was confirmed."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import random
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
import uvloop

from leveret.store import GroupCommitter, QueueStore, SharedStore, StoreWriteError
from leveret.store.files import FileSystem

from .faults import CountingFileSystem, FaultyFileSystem, PowerLossFileSystem

SLOW = os.environ.get("LEVERET_SLOW") == "1"


async def _wait_until(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        await asyncio.sleep(0.005)


def _append_confirmed(
    committer: GroupCommitter, store: QueueStore, seq: int, body: bytes
) -> Awaitable[None]:
    future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def confirm(error: BaseException | None) -> None:
        if error is None:
            future.set_result(None)
        else:
            future.set_exception(error)

    store.append(seq, "amq.direct", "key", b"header", body, on_durable=confirm)
    return future


def test_concurrent_writes_share_fsyncs(tmp_path: Path) -> None:
    fs = CountingFileSystem()
    producers, per_producer = 50, 20

    async def main() -> None:
        committer = GroupCommitter()
        store = QueueStore.open(str(tmp_path), committer=committer, fs=fs)
        counter = iter(range(1, producers * per_producer + 1))

        async def produce() -> None:
            for _ in range(per_producer):
                await _append_confirmed(committer, store, next(counter), b"x" * 100)

        await asyncio.gather(*(produce() for _ in range(producers)))
        stats = committer.statistics()
        assert stats.callbacks == producers * per_producer
        assert stats.failed_batches == 0
        # Each producer waits for its previous message, so a batch holds about one message
        # per producer: roughly per_producer batches, never one fsync per message.
        assert fs.total_syncs() <= producers * per_producer / 10, fs.syncs
        assert stats.largest_batch >= producers / 2
        segment_writes = fs.writes[str(tmp_path / "0000000001.seg")]
        assert segment_writes <= stats.batches + 1, "one write per batch"
        await committer.close()
        store.close()

    asyncio.run(main())
    store = QueueStore.open(str(tmp_path))
    assert store.message_count == producers * per_producer
    store.close()


class _SlowSyncFileSystem(CountingFileSystem):
    """fsyncs take a while and report how many ran at once on the same file."""

    def __init__(self) -> None:
        super().__init__()
        self.in_flight: dict[int, int] = {}
        self.most_at_once = 0
        self._guard = threading.Lock()

    def sync(self, fd: int) -> None:
        with self._guard:
            self.in_flight[fd] = self.in_flight.get(fd, 0) + 1
            self.most_at_once = max(self.most_at_once, self.in_flight[fd])
        try:
            time.sleep(0.003)
            super().sync(fd)
        finally:
            with self._guard:
                self.in_flight[fd] -= 1


def test_one_fsync_in_flight_per_file(tmp_path: Path) -> None:
    fs = _SlowSyncFileSystem()

    async def main() -> None:
        committer = GroupCommitter()
        store = QueueStore.open(str(tmp_path), committer=committer, fs=fs)
        seqs = iter(range(1, 100_000))
        loop_thread = threading.get_ident()
        callback_threads: set[int] = set()

        async def produce() -> None:
            for _ in range(30):
                future = _append_confirmed(committer, store, next(seqs), b"y" * 200)
                store.mark_delivered(store.next_seq - 1)
                callback_threads.add(threading.get_ident())
                await future

        await asyncio.gather(*(produce() for _ in range(8)))
        await committer.close()
        store.close()
        assert callback_threads == {loop_thread}

    asyncio.run(main())
    assert fs.most_at_once == 1


def test_a_callback_runs_only_after_its_fsync(tmp_path: Path) -> None:
    fs = CountingFileSystem()

    async def main() -> None:
        committer = GroupCommitter()
        store = QueueStore.open(str(tmp_path), committer=committer, fs=fs)
        seen: list[tuple[int, BaseException | None]] = []
        loop_thread = threading.get_ident()

        def confirm(error: BaseException | None) -> None:
            assert threading.get_ident() == loop_thread
            seen.append((fs.syncs_of(".seg"), error))

        store.append(1, "", "", b"h", b"body", on_durable=confirm)
        assert seen == []
        await committer.wait_durable()
        assert seen == [(1, None)]
        await committer.close()
        store.close()

    asyncio.run(main())


def test_a_broken_callback_does_not_stop_the_others(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def main() -> None:
        committer = GroupCommitter()
        store = QueueStore.open(str(tmp_path), committer=committer)
        results: list[BaseException | None] = []

        def broken(error: BaseException | None) -> None:
            raise RuntimeError("broken confirm handler")

        store.append(1, "", "", b"h", b"one", on_durable=broken)
        store.append(2, "", "", b"h", b"two", on_durable=results.append)
        with caplog.at_level(logging.ERROR):
            await committer.wait_durable()
        assert results == [None]
        assert "durability callback failed" in caplog.text
        await committer.close()
        store.close()

    asyncio.run(main())


def test_fsync_failure_nacks_then_recovers_without_loss(tmp_path: Path) -> None:
    fs = FaultyFileSystem()

    async def main() -> None:
        committer = GroupCommitter()
        store = QueueStore.open(str(tmp_path), committer=committer, fs=fs)
        await _append_confirmed(committer, store, 1, b"before")
        fs.sync_error = errno.EIO
        failing = [_append_confirmed(committer, store, seq, b"during") for seq in (2, 3)]
        results = await asyncio.gather(*failing, return_exceptions=True)
        assert all(isinstance(result, StoreWriteError) for result in results)
        with pytest.raises(StoreWriteError):
            await committer.wait_durable()
        fs.sync_error = None
        await _append_confirmed(committer, store, 4, b"after")
        await committer.close()
        store.close()

    asyncio.run(main())
    store = QueueStore.open(str(tmp_path))
    messages = store.read_messages(None, 10).messages
    # Nacked messages may still be stored (a nack does not promise removal), never twice.
    assert [m.seq for m in messages] == [1, 2, 3, 4]
    assert [m.body for m in messages] == [b"before", b"during", b"during", b"after"]
    store.close()


def _stored_seqs(directory: Path, caplog: pytest.LogCaptureFixture) -> list[int]:
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        store = QueueStore.open(str(directory))
    seqs = [m.seq for m in store.read_messages(None, 10_000).messages]
    store.close()
    return seqs


def test_enospc_keeps_earlier_data_and_recovers_when_space_returns(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    fs = FaultyFileSystem()
    snapshot = tmp_path / "snapshot"

    async def main() -> None:
        committer = GroupCommitter()
        store = QueueStore.open(str(tmp_path / "q"), committer=committer, fs=fs)
        for seq in range(1, 11):
            await _append_confirmed(committer, store, seq, b"d" * 500)
        fs.write_budget = 700  # one record and a torn piece of the next
        futures = [_append_confirmed(committer, store, seq, b"e" * 500) for seq in range(11, 16)]
        results = await asyncio.gather(*futures, return_exceptions=True)
        assert all(isinstance(result, StoreWriteError) for result in results)
        assert fs.failed_writes >= 1
        # What a crash now would leave behind: the files as they are on disk.
        snapshot.mkdir()
        for name in os.listdir(tmp_path / "q"):
            (snapshot / name).write_bytes((tmp_path / "q" / name).read_bytes())
        fs.write_budget = None
        await _append_confirmed(committer, store, 16, b"f" * 500)
        await committer.close()
        store.close()

    asyncio.run(main())
    crashed = _stored_seqs(snapshot, caplog)
    assert crashed[:10] == list(range(1, 11)), "confirmed data survives a full disk"
    assert crashed == sorted(set(crashed)) and set(crashed) <= set(range(1, 16))
    assert _stored_seqs(tmp_path / "q", caplog) == list(range(1, 17))
    assert "torn" not in caplog.text, "the retry left no garbage between records"


def _power_loss_round(directory: Path, seed: int) -> None:
    randomness = random.Random(seed)
    fs = PowerLossFileSystem(seed)
    confirmed: dict[str, set[int]] = {"q0": set(), "q1": set()}
    acked: dict[str, set[int]] = {"q0": set(), "q1": set()}
    target = randomness.randint(1, 400)

    def body_of(seq: int) -> bytes:
        size = 6000 if seq % 7 == 0 else 60 + seq % 50
        return (b"%d|" % seq) * (size // 4 + 1)

    async def main() -> None:
        committer = GroupCommitter(lazy_sync_delay=0.01)
        shared = SharedStore(
            str(directory / "bodies"), fs=fs, committer=committer, file_size=100_000
        )
        stores = {
            name: QueueStore.open(
                str(directory / name),
                shared=shared,
                committer=committer,
                fs=fs,
                segment_size=30_000,
            )
            for name in confirmed
        }
        shared.collect_garbage()
        enough = asyncio.Event()
        next_seq = iter(range(stores["q0"].next_seq, 10**9))
        total = 0

        async def produce() -> None:
            nonlocal total
            while True:
                seq = next(next_seq)
                stored = shared.share(body_of(seq))
                names = [name for name in stores if randomness.random() < 0.8] or ["q0"]
                for name in names:
                    stores[name].append(seq, "fanout", "", b"h", stored)
                    if randomness.random() < 0.3:
                        stores[name].mark_delivered(seq)

                def confirm(
                    error: BaseException | None, seq: int = seq, names: list[str] = names
                ) -> None:
                    nonlocal total
                    if error is None and not enough.is_set():
                        for name in names:
                            confirmed[name].add(seq)
                        total += 1
                        if total >= target:
                            enough.set()

                committer.call_when_durable(confirm)
                if randomness.random() < 0.3:
                    name = randomness.choice(list(stores))
                    candidates = sorted(confirmed[name] - acked[name])
                    if candidates:
                        victim = randomness.choice(candidates[:20])
                        stores[name].ack(victim)
                        acked[name].add(victim)
                await asyncio.sleep(0 if randomness.random() < 0.7 else 0.001)

        producers = [asyncio.create_task(produce()) for _ in range(4)]
        await asyncio.wait_for(enough.wait(), 30)
        fs.freeze()
        for producer in producers:
            producer.cancel()
        await asyncio.gather(*producers, return_exceptions=True)
        with contextlib.suppress(StoreWriteError):
            await committer.close()

    asyncio.run(main())
    fs.crash()
    shared = SharedStore(str(directory / "bodies"))
    stores = {name: QueueStore.open(str(directory / name), shared=shared) for name in confirmed}
    shared.collect_garbage()
    for name, store in stores.items():
        messages = store.read_messages(None, 10**6).messages
        seqs = [message.seq for message in messages]
        assert seqs == sorted(set(seqs)), (seed, name)
        missing = confirmed[name] - acked[name] - set(seqs)
        assert not missing, (seed, name, sorted(missing)[:10])
        for message in messages:
            assert message.body == body_of(message.seq), (seed, name, message.seq)
        store.close()
    shared.close()


@pytest.mark.parametrize("seed", range(50 if SLOW else 4))
def test_power_loss_keeps_every_confirmed_message(tmp_path: Path, seed: int) -> None:
    _power_loss_round(tmp_path, seed)


def test_lazy_marks_are_fsynced_without_any_confirm(tmp_path: Path) -> None:
    fs = CountingFileSystem()

    async def main() -> None:
        committer = GroupCommitter(lazy_sync_delay=0.02)
        store = QueueStore.open(str(tmp_path), committer=committer, fs=fs)
        await _append_confirmed(committer, store, 1, b"one")
        await _append_confirmed(committer, store, 2, b"two")
        store.mark_delivered(1)
        store.ack(2)
        assert fs.syncs_of(".marks") == 0
        await _wait_until(lambda: fs.syncs_of(".marks") >= 1)
        await committer.close()
        # Not closing the store: the marks must already be durable.

    asyncio.run(main())
    store = QueueStore.open(str(tmp_path), fs=FileSystem())
    assert [(m.seq, m.redelivered) for m in store.read_messages(None, 10).messages] == [(1, True)]
    store.close()


def test_a_batch_hands_what_it_takes_to_the_os_at_once(tmp_path: Path) -> None:
    """A client's socket write calls `flush()` so that the delivery marks of what it carries
    reach the OS first. A lazy batch that took the marks before that flush must have written
    them already: on the node's loop (uvloop) its timer runs ahead of the callbacks queued in
    the turn before, and a kill -9 before the batch's task ran would otherwise lose marks
    of messages the client had."""
    sizes: list[int] = []
    marks = tmp_path / "0000000001.marks"

    def size() -> int:
        return marks.stat().st_size if marks.exists() else 0

    async def main() -> None:
        loop = asyncio.get_running_loop()
        committer = GroupCommitter(lazy_sync_delay=0)
        store = QueueStore.open(str(tmp_path), committer=committer)
        await _append_confirmed(committer, store, 1, b"one")
        await _append_confirmed(committer, store, 2, b"two")
        written = loop.create_future()

        def first_delivery() -> None:
            store.mark_delivered(1)  # written to the OS in the next turn, which arms the timer
            loop.call_soon(second_delivery)

        def second_delivery() -> None:
            sizes.append(size())
            store.mark_delivered(2)  # the lazy batch's timer takes it in the next turn
            loop.call_soon(client_write)

        def client_write() -> None:
            committer.flush()
            sizes.append(size())
            written.set_result(None)

        loop.call_soon(first_delivery)
        await written
        await committer.close()
        store.close()

    uvloop.run(main())
    assert sizes[1] > sizes[0] > 0
