"""The total-queue workload and its checker: every confirmed integer must come out of a queue.

Producers on every node publish unique integers, persistent and mandatory, with confirms, to
durable queues homed on different nodes; consumers on every node record each delivery, then
acknowledge it. A publish whose confirm never came (timeout, nack, return, lost connection) has
an unknown outcome: its integer may or may not come out. After the faults end and the cluster
has healed, everything left is drained, and the checker compares.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import threading
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import aio_pika
import aiormq
from pamqp import commands

_PUBLISH_SECONDS = 5.0
_CONNECT_SECONDS = 3.0
_CLOSE_SECONDS = 2.0
# A consumer's connection lives at most this long, then reconnects: a consumer cancelled by its
# queue's home node, or stuck behind a paused node, finds its way back without being told.
_CONSUMER_SESSION_SECONDS = 4.0
_RETRY_SECONDS = 0.3

# What a client sees when a node is down, cut off, paused or refusing for now.
_CLIENT_ERRORS: tuple[type[BaseException], ...] = (
    aio_pika.exceptions.AMQPError,
    aiormq.exceptions.AMQPError,
    ConnectionError,
    OSError,
    asyncio.TimeoutError,
    RuntimeError,
)

# Closing gives up on a node that does not answer (wait_for cancels the close).
_CLOSE_ERRORS: tuple[type[BaseException], ...] = (*_CLIENT_ERRORS, asyncio.CancelledError)


@dataclass(frozen=True)
class Verdict:
    """What the checker found (Jepsen's total-queue figures)."""

    attempted: int
    confirmed: int
    delivered: int  # distinct integers that came out
    deliveries: int  # every delivery, repeats included
    lost: tuple[int, ...]  # confirmed, never delivered
    unexpected: tuple[int, ...]  # delivered, never published
    duplicated: int  # integers delivered more than once
    unmarked: tuple[int, ...]  # delivered again without the redelivered flag
    recovered: int  # published without a confirm, delivered all the same

    @property
    def ok(self) -> bool:
        return not self.lost and not self.unexpected and not self.unmarked

    def summary(self) -> str:
        return (
            f"{self.attempted} published, {self.confirmed} confirmed, {self.delivered} delivered "
            f"({self.deliveries} deliveries): lost {len(self.lost)}, duplicated "
            f"{self.duplicated} (unmarked {len(self.unmarked)}), unexpected "
            f"{len(self.unexpected)}, recovered {self.recovered}"
        )


def check(attempted: set[int], confirmed: set[int], deliveries: list[tuple[int, bool]]) -> Verdict:
    """Judge a run: `deliveries` are (integer, redelivered) in the order consumers got them.

    An integer delivered k times must carry the redelivered flag on at least k - 1 of them:
    a broker may deliver again what it cannot know was acknowledged, but must say so."""
    counts = Counter(value for value, _ in deliveries)
    marked = Counter(value for value, redelivered in deliveries if redelivered)
    delivered = set(counts)
    return Verdict(
        attempted=len(attempted),
        confirmed=len(confirmed),
        delivered=len(delivered),
        deliveries=len(deliveries),
        lost=tuple(sorted(confirmed - delivered)),
        unexpected=tuple(sorted(delivered - attempted)),
        duplicated=sum(1 for count in counts.values() if count > 1),
        unmarked=tuple(sorted(v for v, n in counts.items() if n > 1 and marked[v] < n - 1)),
        recovered=len(delivered & (attempted - confirmed)),
    )


@dataclass
class History:
    attempted: set[int] = field(default_factory=set)
    confirmed: set[int] = field(default_factory=set)
    deliveries: list[tuple[int, bool]] = field(default_factory=list)
    client_errors: Counter[str] = field(default_factory=Counter)
    # How each publish ended: confirmed, returned, nacked, or timeout (or the connection went).
    outcomes: Counter[str] = field(default_factory=Counter)


async def _close(connection: aio_pika.abc.AbstractConnection | None) -> None:
    """Close without waiting on a node that no longer answers."""
    if connection is None:
        return
    with contextlib.suppress(*_CLOSE_ERRORS):
        await asyncio.wait_for(connection.close(), _CLOSE_SECONDS)


def _redelivered(message: aio_pika.abc.AbstractIncomingMessage) -> bool:
    """Marked as a repeat: by the queue that delivered it, or, for a message a federation link
    brought, by the upstream queue that gave it to the link again (its x-received-from hop)."""
    if message.redelivered:
        return True
    hops = (message.headers or {}).get("x-received-from")
    if isinstance(hops, list) and hops and isinstance(hops[0], dict):
        return bool(hops[0].get("redelivered"))
    return False


class TotalQueue:
    """The workload, run on an event loop in a thread of its own; `urls` maps node index to
    AMQP URL, `queues` maps each queue to the node index that homes it. By default producers
    run on every node, each node consumes every queue, and the leftovers are taken from each
    queue's home; `producers`, `consumers` ((node, queue) pairs) and `drains` ((queue, node)
    pairs) say otherwise, for queues of the same name on brokers that are not one cluster."""

    def __init__(
        self,
        urls: list[str],
        queues: dict[str, int],
        seed: int,
        producers: list[int] | None = None,
        consumers: list[tuple[int, str]] | None = None,
        drains: list[tuple[str, int]] | None = None,
    ) -> None:
        self.urls, self.queues = urls, queues
        self.producers = list(range(len(urls))) if producers is None else producers
        self.consumers = (
            [(node, queue) for node in range(len(urls)) for queue in queues]
            if consumers is None
            else consumers
        )
        self.drains = list(queues.items()) if drains is None else drains
        self.rng = random.Random(seed)
        self.history = History()
        self._next = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._publishing = True
        self._consuming = True
        self._tasks: list[asyncio.Task[None]] = []

    # -- control from the harness's thread ---------------------------------------------------

    def call(self, coro: Awaitable[object], timeout: float = 60) -> object:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)  # type: ignore[arg-type]

    def start(self) -> None:
        self._thread.start()
        self.call(self._declare_queues())
        self.call(self._spawn())

    async def _spawn(self) -> None:
        for node in self.producers:
            self._tasks.append(asyncio.create_task(self._keep(self._producer, node)))
        for node, queue in self.consumers:
            self._tasks.append(asyncio.create_task(self._keep(self._consumer, node, queue)))

    def stop_publishing(self) -> None:
        self._loop.call_soon_threadsafe(setattr, self, "_publishing", False)

    def deliveries_seen(self) -> int:
        return len(self.history.deliveries)

    def remaining(self) -> int | None:
        """Messages ready in all queues, asked of each queue's home node; None if a node does
        not answer."""
        try:
            return int(self.call(self._remaining(), 30))  # type: ignore[call-overload]
        except _CLIENT_ERRORS:
            return None

    def finish(self, before_sweep: Callable[[], None] | None = None) -> Verdict:
        """Stop the consumers (what they held unacknowledged goes back), call `before_sweep`,
        take what is left with basic.get, and judge."""
        self._consuming = False
        self._publishing = False
        self.call(self._stop_tasks(), 60)
        if before_sweep is not None:
            before_sweep()
        self.call(self._sweep(), 120)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        return check(self.history.attempted, self.history.confirmed, self.history.deliveries)

    def abandon(self) -> None:
        """Stop the loop without judging (the run failed elsewhere)."""
        self._consuming = self._publishing = False
        try:
            self.call(self._stop_tasks(), 30)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)

    # -- the clients ------------------------------------------------------------------------

    async def _connect(self, node: int) -> aio_pika.abc.AbstractConnection:
        return await asyncio.wait_for(
            aio_pika.connect(self.urls[node], timeout=_CONNECT_SECONDS), _CONNECT_SECONDS + 1
        )

    async def _declare_queues(self) -> None:
        for queue, home in self.queues.items():
            connection = await self._connect(home)
            try:
                channel = await connection.channel()
                await channel.declare_queue(queue, durable=True)
            finally:
                await _close(connection)

    async def _keep(self, session: Callable[..., Awaitable[None]], *args: object) -> None:
        """Run `session` again and again until stopped; a client error means: try again."""
        while self._consuming:
            try:
                await session(*args)
            except _CLIENT_ERRORS as error:
                self.history.client_errors[type(error).__name__] += 1
            await asyncio.sleep(_RETRY_SECONDS)

    async def _producer(self, node: int) -> None:
        if not self._publishing:
            return
        connection = await self._connect(node)
        try:
            channel = await connection.channel(publisher_confirms=True)
            queues = sorted(self.queues)
            while self._publishing:
                value = self._next
                self._next += 1
                self.history.attempted.add(value)
                message = aio_pika.Message(
                    str(value).encode(), delivery_mode=aio_pika.DeliveryMode.PERSISTENT
                )
                try:
                    outcome = await channel.default_exchange.publish(
                        message, self.rng.choice(queues), mandatory=True, timeout=_PUBLISH_SECONDS
                    )
                except aio_pika.exceptions.DeliveryError:
                    self.history.outcomes["nacked"] += 1
                    continue
                except _CLIENT_ERRORS:
                    self.history.outcomes["timeout or connection lost"] += 1
                    raise
                # A returned message (its queue's home is unreachable) is not confirmed.
                if isinstance(outcome, commands.Basic.Ack):
                    self.history.confirmed.add(value)
                    self.history.outcomes["confirmed"] += 1
                else:
                    self.history.outcomes["returned"] += 1
                await asyncio.sleep(self.rng.uniform(0.002, 0.01))
        finally:
            await _close(connection)

    async def _consumer(self, node: int, queue: str) -> None:
        connection = await self._connect(node)
        try:
            channel = await connection.channel()
            await channel.set_qos(prefetch_count=20)
            source = await channel.declare_queue(queue, passive=True, timeout=_PUBLISH_SECONDS)

            async def record(message: aio_pika.abc.AbstractIncomingMessage) -> None:
                self.history.deliveries.append((int(message.body), _redelivered(message)))
                await message.ack()

            await source.consume(record, timeout=_PUBLISH_SECONDS)
            ends = asyncio.get_running_loop().time() + _CONSUMER_SESSION_SECONDS
            while self._consuming and asyncio.get_running_loop().time() < ends:
                if connection.is_closed or channel.is_closed:
                    return
                await asyncio.sleep(0.1)
        finally:
            await _close(connection)

    async def _stop_tasks(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()

    async def _remaining(self) -> int:
        total = 0
        for queue, home in self.drains:
            connection = await self._connect(home)
            try:
                channel = await connection.channel()
                declared = await channel.declare_queue(queue, passive=True, timeout=5)
                total += declared.declaration_result.message_count or 0
            finally:
                await _close(connection)
        return total

    async def _sweep(self) -> None:
        for queue, home in self.drains:
            connection = await self._connect(home)
            try:
                channel = await connection.channel()
                source = await channel.declare_queue(queue, passive=True, timeout=5)
                while (message := await source.get(no_ack=True, fail=False, timeout=5)) is not None:
                    self.history.deliveries.append((int(message.body), _redelivered(message)))
            finally:
                await _close(connection)
