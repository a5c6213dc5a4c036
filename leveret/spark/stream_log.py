"""Talking to stream queues by offset: how far a stream reaches (on the driver) and reading one
range of it (on an executor), with Leveret's asyncio AMQP client."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, NamedTuple, TypeVar

from federation.client import AuthenticationFailed, UpstreamClosed, UpstreamConnection

from .consumer import Delivery, new_loop, shown
from .offsets import offset_of
from .options import OptionError

T = TypeVar("T")
_CONNECT_SECONDS = 10.0
_REPLY_SECONDS = 30.0  # the most a probe waits for the one message it asked for
# A range read fails when no delivery came for this long: the range was planned from offsets
# the stream had, so they come unless retention took them (then the first kept one comes).
_STALL_SECONDS = 60.0
# The probe for the last offset takes up to this many messages: Leveret sends only the last
# one, RabbitMQ the chunk it belongs to, whose last is the stream's last.
_LAST_CHUNK = 4096
_NOT_FOUND = 404
_PRECONDITION_FAILED = 406


class Bounds(NamedTuple):
    """The first offset a stream keeps and the one its next message will get."""

    first: int
    next: int


async def _connected(uris: Sequence[str], name: str) -> UpstreamConnection:
    """A connection to the first URI that answers; OptionError names the option at fault."""
    failures = []
    for uri in uris:
        try:
            return await UpstreamConnection.open(uri, name, _CONNECT_SECONDS)
        except AuthenticationFailed as refused:
            raise OptionError(
                f"the broker refused the credentials of option 'uri' ({shown(uri)}): {refused}"
            ) from None
        except (OSError, TimeoutError, UpstreamClosed) as failed:
            failures.append(f"{shown(uri)}: {failed or type(failed).__name__}")
    raise OptionError(f"cannot connect to the broker of option 'uri' ({'; '.join(failures)})")


async def _checked(step: Awaitable[T], queue: str) -> T:
    """`step`, with a missing queue or one that is not a stream named as the options' fault."""
    try:
        return await step
    except UpstreamClosed as closed:
        if closed.reply_code == _NOT_FOUND:
            raise OptionError(f"option 'queue': {closed.reply_text}") from None
        if closed.reply_code == _PRECONDITION_FAILED and "x-stream-offset" in closed.reply_text:
            raise OptionError(
                f"option 'stream' is true but queue '{queue}' is not a stream queue: "
                f"{closed.reply_text}"
            ) from None
        raise


class StreamProbe:
    """One connection on a thread of its own that asks each stream for its first and last
    offsets: a consumer from x-stream-offset `first`, then one from `last`, each cancelled at
    its first delivery (a few round trips; from Leveret no message beyond those two)."""

    def __init__(self, uris: Sequence[str], name: str) -> None:
        self.uris = tuple(uris)
        self.name = name
        self._connection: UpstreamConnection | None = None
        self._loop = new_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def _run(self, coroutine: Coroutine[Any, Any, T], timeout: float) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout)

    def bounds(self, queues: Sequence[str]) -> dict[str, Bounds | None]:
        """Each queue's Bounds, or None while it keeps no message."""
        timeout = (_CONNECT_SECONDS + 2 * _REPLY_SECONDS) * (len(queues) + len(self.uris))
        return self._run(self._bounds(queues), timeout)

    async def _bounds(self, queues: Sequence[str]) -> dict[str, Bounds | None]:
        found: dict[str, Bounds | None] = {}
        for queue in queues:
            if self._connection is None or self._connection.closed.done():
                self._connection = await _connected(self.uris, self.name)
            connection = self._connection
            try:
                kept = await _checked(connection.queue_declare(queue, passive=True), queue)
                if kept.message_count == 0:
                    found[queue] = None
                    continue
                first = await _checked(_offset_at(connection, queue, "first", 1), queue)
                last = await _checked(_offset_at(connection, queue, "last", _LAST_CHUNK), queue)
            except BaseException:
                await self._close()
                raise
            found[queue] = Bounds(first, max(first, last) + 1)
        return found

    async def _close(self) -> None:
        if self._connection is not None:
            await self._connection.close()
        self._connection = None

    def close(self) -> None:
        if self._loop.is_closed():
            return
        if self._thread.is_alive():
            with contextlib.suppress(TimeoutError, UpstreamClosed, OSError, RuntimeError):
                self._run(self._close(), _CONNECT_SECONDS)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(_CONNECT_SECONDS)
        if not self._thread.is_alive():
            self._loop.close()


async def _offset_at(connection: UpstreamConnection, queue: str, where: str, room: int) -> int:
    """The highest offset a consumer from x-stream-offset `where`, with a prefetch of `room`,
    gets by the time it is cancelled after its first delivery."""
    arrived: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    highest = last_tag = -1

    def on_delivery(
        tag: int, redelivered: bool, exchange: str, routing_key: str, header: bytes, body: bytes
    ) -> None:
        nonlocal highest, last_tag
        highest, last_tag = max(highest, offset_of(header)), tag
        if not arrived.done():
            arrived.set_result(None)

    tag_name = f"spark-probe-{where}"
    await connection.basic_qos(room)
    await connection.basic_consume(
        queue,
        tag_name,
        no_ack=False,
        arguments={"x-stream-offset": where},
        on_delivery=on_delivery,
    )
    await asyncio.wait_for(arrived, _REPLY_SECONDS)
    await connection.basic_cancel(tag_name)
    connection.settle([(last_tag, True)])  # the credit back, for the channel's next consumer
    return highest


def read_range(
    uris: Sequence[str], queue: str, start: int, end: int, prefetch: int, name: str
) -> list[Delivery]:
    """The messages of `queue` from offset `start` up to, not including, `end` (those that
    retention has not deleted), in offset order."""
    loop = new_loop()
    try:
        return loop.run_until_complete(_read_range(uris, queue, start, end, prefetch, name))
    finally:
        loop.close()


async def _read_range(
    uris: Sequence[str], queue: str, start: int, end: int, prefetch: int, name: str
) -> list[Delivery]:
    connection = await _connected(uris, name)
    try:
        kept = await _checked(connection.queue_declare(queue, passive=True), queue)
        if kept.message_count == 0:
            return []  # retention took the whole range (and everything after it)
        # No more credit than the range holds: the broker sends nothing beyond it.
        prefetch = max(1, min(prefetch, end - start))
        await connection.basic_qos(prefetch)
        taken: list[Delivery] = []
        done = asyncio.get_running_loop().create_future()
        on_delivery = _range_taker(connection, queue, start, end, prefetch, taken, done)
        await _checked(
            connection.basic_consume(
                queue,
                "spark-range",
                no_ack=False,
                arguments={"x-stream-offset": start},
                on_delivery=on_delivery,
            ),
            queue,
        )
        seen, quiet_since = 0, time.monotonic()
        while not done.done():
            await asyncio.wait(
                [done, connection.closed], timeout=1.0, return_when=asyncio.FIRST_COMPLETED
            )
            if connection.closed.done() and not done.done():
                raise UpstreamClosed(0, f"reading '{queue}': {connection.closed.result()}")
            if len(taken) != seen:
                seen, quiet_since = len(taken), time.monotonic()
            elif time.monotonic() - quiet_since > _STALL_SECONDS:
                raise TimeoutError(
                    f"stream queue '{queue}' sent nothing for {_STALL_SECONDS:.0f} s while "
                    f"offsets {start} to {end - 1} were read ({len(taken)} read)"
                )
        return taken
    finally:
        await connection.close()


def _range_taker(
    connection: UpstreamConnection,
    queue: str,
    start: int,
    end: int,
    prefetch: int,
    taken: list[Delivery],
    done: asyncio.Future[None],
) -> Callable[[int, bool, str, str, bytes, bytes], None]:
    """The delivery handler of a range read: keeps what lies in the range, gives the credit
    back half a prefetch at a time, and is done at the range's last offset (or past it, when
    retention deleted the rest)."""
    append = taken.append
    credit_every = max(1, prefetch // 2)
    unsettled = 0

    def on_delivery(
        tag: int, redelivered: bool, exchange: str, routing_key: str, header: bytes, body: bytes
    ) -> None:
        nonlocal unsettled
        if done.done():
            return
        offset = offset_of(header)
        if start <= offset < end:
            append(Delivery(queue, tag, redelivered, exchange, routing_key, header, body))
        if offset >= end - 1:
            done.set_result(None)
            return
        unsettled += 1
        if unsettled >= credit_every:
            connection.settle([(tag, True)])
            unsettled = 0

    return on_delivery
