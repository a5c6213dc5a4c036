"""Consuming queues on a thread of its own, so that deliveries keep arriving while Spark works."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
import time
from collections import deque
from collections.abc import Coroutine, Sequence
from typing import Any, NamedTuple, TypeVar

from federation.client import (
    AuthenticationFailed,
    DeliveryHandler,
    UpstreamClosed,
    UpstreamConnection,
)

from .options import MAX_PREFETCH, OptionError

T = TypeVar("T")
_CONNECT_SECONDS = 10.0
_POLL_SECONDS = 0.002  # how often a waiting take() looks for deliveries
_QUIET_SECONDS = 0.02  # no delivery for this long: what is there is the batch
_FILL_SECONDS = 2.0  # the most a batch waits to fill while deliveries keep coming
_NOT_FOUND = 404
__all__ = ["MAX_PREFETCH", "BrokerLost", "Consumer", "Delivery"]


class Delivery(NamedTuple):
    queue: str
    tag: int
    redelivered: bool
    exchange: str
    routing_key: str
    header: bytes  # the content header payload; its properties are decoded only for the row
    body: bytes


class BrokerLost(ConnectionError):
    """The connection of a running consumer went away: its unacknowledged deliveries go back to
    their queues, and what was taken from it can no longer be acknowledged."""


def shown(uri: str) -> str:
    """A URI without its credentials, for errors and logs."""
    scheme, _, rest = uri.partition("://")
    return f"{scheme}://{rest.rsplit('@', 1)[-1]}"


def new_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


class Consumer:
    """One connection per queue (delivery tags are per channel, and a channel per queue keeps
    each queue's acknowledgements a single `multiple` ack), all on one event loop thread.

    Deliveries are appended to one deque from the protocol's data_received: no task and no
    lock per message. `take` and `acknowledge` are called from Spark's thread.
    """

    def __init__(
        self,
        uris: Sequence[str],
        queues: Sequence[str],
        *,
        prefetch: int,
        priority: int,
        name: str,
    ) -> None:
        self.uris = tuple(uris)
        self.queues = tuple(queues)
        self.prefetch = prefetch
        self.priority = priority
        self.name = name
        self.uri = ""  # the one connected to
        self.ready: dict[str, int] = {}  # each queue's ready messages when the consumer began
        self._arrived: deque[Delivery] = deque()
        self._connections: dict[str, UpstreamConnection] = {}
        self._lost: str | None = None
        self._loop = new_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def _run(self, coroutine: Coroutine[Any, Any, T], timeout: float) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout)

    def start(self) -> Consumer:
        """Connect to the first URI that answers and consume every queue; OptionError names
        the option at fault (credentials, address, queue)."""
        try:
            self._run(self._start(), _CONNECT_SECONDS * (len(self.uris) + 1))
        except BaseException:
            self.close()
            raise
        return self

    async def _start(self) -> None:
        failures = []
        for uri in self.uris:
            try:
                await self._connect(uri)
            except AuthenticationFailed as refused:
                raise OptionError(
                    f"the broker refused the credentials of option 'uri' ({shown(uri)}): {refused}"
                ) from None
            except (OSError, TimeoutError, UpstreamClosed) as failed:
                if isinstance(failed, UpstreamClosed) and failed.reply_code == _NOT_FOUND:
                    raise OptionError(f"option 'queue': {failed.reply_text}") from None
                await self._close_all()
                failures.append(f"{shown(uri)}: {failed or type(failed).__name__}")
                continue
            self.uri = uri
            return
        raise OptionError(f"cannot connect to the broker of option 'uri' ({'; '.join(failures)})")

    async def _connect(self, uri: str) -> None:
        for queue in self.queues:
            connection = await UpstreamConnection.open(
                uri, f"{self.name} {queue}", _CONNECT_SECONDS
            )
            self._connections[queue] = connection
            declared = await connection.queue_declare(queue, passive=True)
            self.ready[queue] = declared.message_count
            if self.prefetch:
                await connection.basic_qos(self.prefetch)
            await connection.basic_consume(
                queue,
                f"spark-{queue}",
                no_ack=False,
                arguments={"x-priority": self.priority} if self.priority else {},
                on_delivery=self._deliveries_of(queue),
            )
            connection.closed.add_done_callback(functools.partial(self._on_closed, queue))

    def _deliveries_of(self, queue: str) -> DeliveryHandler:
        arrived = self._arrived.append

        def on_delivery(
            tag: int, redelivered: bool, exchange: str, routing_key: str, header: bytes, body: bytes
        ) -> None:
            arrived(Delivery(queue, tag, redelivered, exchange, routing_key, header, body))

        return on_delivery

    def _on_closed(self, queue: str, closed: asyncio.Future[UpstreamClosed]) -> None:
        reason = closed.result()
        if self._lost is None and queue in self._connections:
            self._lost = f"the connection to {shown(self.uri)} for queue '{queue}' ended: {reason}"

    def check(self) -> None:
        if self._lost is not None:
            raise BrokerLost(self._lost)

    def waiting(self) -> int:
        return len(self._arrived)

    def take(self, max_messages: int, max_bytes: int, wait: float) -> list[Delivery]:
        """What arrived, in order, up to the limits; waits up to `wait` s for a first one."""
        self.check()
        arrived = self._arrived
        if not arrived and wait > 0:
            deadline = time.monotonic() + wait
            while not arrived and time.monotonic() < deadline and self._lost is None:
                time.sleep(_POLL_SECONDS)
            self.check()
        # While a backlog streams in, fill the batch: fewer, fuller batches cost Spark less.
        seen, quiet_since, started = len(arrived), time.monotonic(), time.monotonic()
        while 0 < seen < max_messages and self._lost is None:
            time.sleep(_POLL_SECONDS)
            now = time.monotonic()
            if len(arrived) != seen:
                seen, quiet_since = len(arrived), now
            elif now - quiet_since > _QUIET_SECONDS or now - started > _FILL_SECONDS:
                break
        self.check()
        taken: list[Delivery] = []
        size = 0
        pop = arrived.popleft
        while arrived and len(taken) < max_messages and size < max_bytes:
            delivery = pop()
            taken.append(delivery)
            size += len(delivery.body)
        return taken

    def wait_for(self, count: int, timeout: float, idle: float) -> None:
        """Until `count` deliveries wait, none came for `idle` s, or `timeout` s passed."""
        deadline = time.monotonic() + timeout
        seen, quiet_since = len(self._arrived), time.monotonic()
        while len(self._arrived) < count and time.monotonic() < deadline:
            self.check()
            time.sleep(_POLL_SECONDS)
            now = len(self._arrived)
            if now != seen:
                seen, quiet_since = now, time.monotonic()
            elif time.monotonic() - quiet_since > idle:
                break
        self.check()

    def acknowledge(self, last_tags: dict[str, int]) -> None:
        """Acknowledge each queue's deliveries up to and including its tag, one frame per
        queue. (To give deliveries back, close: the broker requeues them in their order.)"""
        self.check()
        for queue, tag in last_tags.items():
            connection = self._connections[queue]
            self._loop.call_soon_threadsafe(connection.settle, [(tag, True)])

    @staticmethod
    def last_tags(deliveries: Sequence[Delivery]) -> dict[str, int]:
        return {delivery.queue: delivery.tag for delivery in deliveries}

    async def _close_all(self) -> None:
        connections = list(self._connections.values())
        self._connections.clear()
        for connection in connections:
            await connection.close()

    def close(self) -> None:
        """Close the connections (what is unacknowledged goes back) and end the thread."""
        if self._loop.is_closed():
            return
        if self._thread.is_alive():
            # The broker requeues what a dropped connection held.
            with contextlib.suppress(TimeoutError, UpstreamClosed, OSError, RuntimeError):
                self._run(self._close_all(), _CONNECT_SECONDS)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(_CONNECT_SECONDS)
        if not self._thread.is_alive():
            self._loop.close()
