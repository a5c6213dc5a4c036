"""A process that publishes into a vhost's stores with group commit until it is killed.

It prints "C <queue> <seq>" once a message is durable (the moment a broker would confirm it)
and "A <queue> <seq>" before acking one, so the test that SIGKILLs it knows what must survive.
Run as: python -m tests.store.crash_writer DIRECTORY SEED
"""

from __future__ import annotations

import asyncio
import random
import sys

from leveret.store import GroupCommitter, QueueStore, SharedStore

QUEUES = ("q0", "q1", "q2")


def body_of(seq: int) -> bytes:
    """Every fifth body goes to the shared store; the content is checkable from the seq."""
    size = 5000 if seq % 5 == 0 else 40 + seq % 90
    return (b"<%d>" % seq * (size // 4 + 1))[:size]


def open_vhost(
    directory: str, committer: GroupCommitter | None = None
) -> tuple[SharedStore, dict[str, QueueStore]]:
    shared = SharedStore(f"{directory}/bodies", committer=committer, file_size=200_000)
    stores = {
        name: QueueStore.open(
            f"{directory}/{name}", shared=shared, committer=committer, segment_size=50_000
        )
        for name in QUEUES
    }
    shared.collect_garbage()
    return shared, stores


async def publish_forever(directory: str, seed: int) -> None:
    randomness = random.Random(seed)
    committer = GroupCommitter(lazy_sync_delay=0.005)
    shared, stores = open_vhost(directory, committer)
    first = max(store.next_seq for store in stores.values())
    seqs = iter(range(first, 10**12))
    confirmed: dict[str, list[int]] = {name: [] for name in QUEUES}
    out = sys.stdout

    def confirm(names: list[str], seq: int) -> None:
        def on_durable(error: BaseException | None) -> None:
            if error is None:
                out.write("".join(f"C {name} {seq}\n" for name in names))
                out.flush()
                for name in names:
                    confirmed[name].append(seq)

        committer.call_when_durable(on_durable)

    async def produce() -> None:
        while True:
            seq = next(seqs)
            stored = shared.share(body_of(seq))
            names = [name for name in QUEUES if randomness.random() < 0.7] or ["q0"]
            for name in names:
                stores[name].append(seq, "fanout", "", b"header", stored)
            confirm(names, seq)
            await asyncio.sleep(0)

    async def consume() -> None:
        while True:
            name = randomness.choice(QUEUES)
            candidates = confirmed[name]
            if len(candidates) > 20:
                seq = candidates.pop(randomness.randrange(len(candidates) // 2))
                stores[name].mark_delivered(seq)
                # A real ack arrives at least one loop iteration after the delivery.
                await asyncio.sleep(0)
                out.write(f"A {name} {seq}\n")
                out.flush()
                stores[name].ack(seq)
            await asyncio.sleep(0)

    await asyncio.gather(*(produce() for _ in range(4)), consume())


if __name__ == "__main__":
    asyncio.run(publish_forever(sys.argv[1], int(sys.argv[2])))
