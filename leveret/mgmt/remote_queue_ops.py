"""Management operations on queues homed on other nodes, through the links to their home nodes.

Counts are asked of the home node when it answers in time; gossip's soft state stands in when
it does not (the node is down or slow), as it did before queues could be reached."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TYPE_CHECKING, TypeVar

from ..amqp.errors import AMQPError
from ..queues.remote import LinkDown, QueueStatus, RequestKind
from ..queues.remote_consumer import RemoteQueueHandle

if TYPE_CHECKING:
    from ..broker import Broker
    from ..queues.entry import QueueEntry
    from ..queues.remote import HomeLink, RemoteQueue

T = TypeVar("T")

# How long a listing waits for home nodes before showing what gossip last said.
LIVE_COUNTS_SECONDS = 2.0


class Unreachable(Exception):
    """The home node of the queue cannot answer."""


def _link(broker: Broker, queue: RemoteQueue) -> HomeLink:
    links = broker.links
    if links is None:
        raise Unreachable(queue.home_node)
    return links.link(queue.home_node)


async def _ask(
    broker: Broker, queue: RemoteQueue, kind: RequestKind, view_query: str = ""
) -> QueueStatus:
    try:
        return await _link(broker, queue).request(
            kind, queue.vhost, queue.name, view_query=view_query
        )
    except LinkDown:
        raise Unreachable(queue.home_node) from None


async def live_counts(
    broker: Broker, queues: list[RemoteQueue], *, view: bool = False, view_query: str = ""
) -> dict[tuple[str, str], QueueStatus]:
    """The home nodes' counts of `queues`, for those that answered in time; with `view`, each
    answer carries the queue's management JSON there (with the samples `view_query` asks for)."""
    if not queues:
        return {}
    kind = RequestKind.VIEW if view else RequestKind.STATUS

    async def one(queue: RemoteQueue) -> QueueStatus | None:
        try:
            status = await _ask(broker, queue, kind, view_query)
        except Unreachable:
            return None
        return status if not status.code else None

    answers = await answered_in_time([one(queue) for queue in queues])
    return {
        (queue.vhost, queue.name): status
        for queue, status in zip(queues, answers, strict=True)
        if status is not None
    }


async def answered_in_time(asked: list[Awaitable[T | None]]) -> list[T | None]:
    """The answers, in order, of what answered within LIVE_COUNTS_SECONDS (None for the rest,
    which are given up)."""
    futures = [asyncio.ensure_future(one) for one in asked]
    if not futures:
        return []
    done, pending = await asyncio.wait(futures, timeout=LIVE_COUNTS_SECONDS)
    for late in pending:
        late.cancel()
    return [future.result() if future in done else None for future in futures]


async def status(broker: Broker, queue: RemoteQueue) -> QueueStatus:
    return await _ask(broker, queue, RequestKind.STATUS)


async def purge(broker: Broker, queue: RemoteQueue) -> QueueStatus:
    return await _ask(broker, queue, RequestKind.PURGE)


async def take(
    broker: Broker, queue: RemoteQueue, count: int
) -> tuple[RemoteQueueHandle, list[tuple[QueueEntry, int]]]:
    """Up to `count` messages from the queue, unsettled, each with the count left after it;
    the handle settles them."""
    link = _link(broker, queue)
    handle = RemoteQueueHandle(link, queue.vhost, queue.name)
    taken: list[tuple[QueueEntry, int]] = []
    for _ in range(count):
        try:
            status = await link.request(RequestKind.GET, queue.vhost, queue.name)
        except LinkDown:
            raise Unreachable(queue.home_node) from None
        if status.code:
            handle.requeue([entry for entry, _ in taken])
            raise AMQPError(status.code, status.text)
        if status.delivery is None:
            break
        taken.append((status.delivery, status.message_count))
    return handle, taken
