"""Append + fsync throughput of the store with group commit, as publishers with confirms see it.

Run as: python -m tests.store.bench_store [--messages N] [--publishers P] [--window W] [--dir D]
Each publisher keeps up to W unconfirmed messages in flight (like a client with a confirm
window); a message counts once the group committer has made it durable.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
import time
from dataclasses import dataclass

from leveret.store import GroupCommitter, QueueStore, SharedStore


@dataclass(frozen=True)
class Result:
    label: str
    messages: int
    seconds: float
    fsyncs: int
    batches: int

    def line(self) -> str:
        rate = self.messages / self.seconds
        per_batch = self.messages / max(self.batches, 1)
        return (
            f"{self.label:<46} {rate:>10,.0f} msg/s   {self.fsyncs:>6} fsyncs   "
            f"{per_batch:>7.1f} msg/batch"
        )


async def _publish(
    directory: str, body_size: int, messages: int, publishers: int, window: int, queues: int
) -> Result:
    committer = GroupCommitter()
    shared = SharedStore(f"{directory}/bodies", committer=committer)
    stores = [
        QueueStore.open(f"{directory}/q{index}", shared=shared, committer=committer)
        for index in range(queues)
    ]
    shared.collect_garbage()
    body = b"b" * body_size
    header = b"\x00\x3c\x00\x00" + body_size.to_bytes(8, "big") + b"\x90\x00\x02"
    seqs = iter(range(1, messages + 1))
    per_publisher = messages // publishers

    async def publisher() -> None:
        in_flight = asyncio.Semaphore(window)
        done = asyncio.Event()
        remaining = per_publisher

        def confirmed(error: BaseException | None) -> None:
            nonlocal remaining
            assert error is None
            in_flight.release()
            remaining -= 1
            if remaining == 0:
                done.set()

        for _ in range(per_publisher):
            await in_flight.acquire()
            seq = next(seqs)
            stored = shared.share(body)
            for store in stores:
                store.append(seq, "amq.direct", "bench", header, stored)
            committer.call_when_durable(confirmed)
        await done.wait()

    started = time.perf_counter()
    await asyncio.gather(*(publisher() for _ in range(publishers)))
    elapsed = time.perf_counter() - started
    statistics = committer.statistics()
    await committer.close()
    for store in stores:
        store.close()
    shared.close()
    label = (
        f"{body_size} B x {queues} queue{'s' if queues > 1 else ''}, "
        f"{publishers} publisher{'s' if publishers > 1 else ''}, window {window}"
    )
    return Result(label, per_publisher * publishers, elapsed, statistics.fsyncs, statistics.batches)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=50_000)
    parser.add_argument("--publishers", type=int, default=8)
    parser.add_argument("--window", type=int, default=100)
    parser.add_argument("--dir", default=None, help="where to write (default: a temp dir)")
    arguments = parser.parse_args()
    window = arguments.window
    cases = [
        (100, arguments.publishers, window, 1),
        (4096, arguments.publishers, window, 1),
        (100, 1, window, 1),
        (100, 1, 1, 1),
        (16 * 1024, arguments.publishers, window, 10),
    ]
    for body_size, publishers, publisher_window, queues in cases:
        directory = tempfile.mkdtemp(prefix="leveret-bench-", dir=arguments.dir)
        try:
            result = asyncio.run(
                _publish(
                    directory,
                    body_size,
                    arguments.messages,
                    publishers,
                    publisher_window,
                    queues,
                )
            )
            print(result.line(), flush=True)
        finally:
            shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
