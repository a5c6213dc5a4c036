"""A link's attempts to reach its home node, with the network's answers scripted: an attempt
that fails while the node calls this one (it came back meanwhile) is followed by another at
once, and what waited for the node waits for that one."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

import pytest

from cluster.data_connection import DataConnection
from leveret.clustering.queue_link import QueueLink
from leveret.message import Message
from leveret.queues.remote import LinkDown


class ScriptedNetwork:
    """Opens nothing: each attempt to connect waits until the test fails it."""

    def __init__(self) -> None:
        self.attempts: list[asyncio.Future[None]] = []
        self.started = asyncio.Event()

    async def open(self, node: str, address: str, link: QueueLink) -> DataConnection:
        attempt = asyncio.get_running_loop().create_future()
        self.attempts.append(attempt)
        self.started.set()
        await attempt
        raise AssertionError("attempts only fail here")

    async def next_attempt(self) -> asyncio.Future[None]:
        """The attempt after those made so far, once it begins."""
        made = len(self.attempts)
        while len(self.attempts) == made:
            self.started.clear()
            await asyncio.wait_for(self.started.wait(), 5)
        return self.attempts[made]


class Publisher:
    def __init__(self) -> None:
        self.answers: list[tuple[int, bool]] = []

    def confirmed(self, seqs: list[int], taken: bool) -> None:
        self.answers += [(seq, taken) for seq in seqs]


async def _down_link() -> tuple[QueueLink, ScriptedNetwork, asyncio.Future[None]]:
    """A link whose first attempt failed, and its next attempt, begun while it counts as down."""
    network = ScriptedNetwork()
    link = QueueLink("home@node", lambda node: "127.0.0.1:1", network.open, lambda: 0)
    assert link.up  # the first use starts the link
    (await network.next_attempt()).set_exception(ConnectionRefusedError())
    return link, network, await network.next_attempt()  # (after the backoff)


async def _begun(operation: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
    """`operation` as a task that has run up to its first wait."""
    task = asyncio.ensure_future(operation)
    await asyncio.wait({task}, timeout=0)
    return task


def test_a_node_that_calls_during_a_failing_attempt_gets_another_at_once() -> None:
    async def scenario() -> None:
        link, network, began_before = await _down_link()
        reaching = await _begun(link.reach())  # it joins the attempt under way
        link.node_is_up()  # the node came back while that attempt was under way
        publisher = Publisher()
        link.publish("/", ["q"], Message("", "q", b"", b"kept"), publisher, 1)
        began_before.set_exception(TimeoutError())
        again = await network.next_attempt()
        assert not reaching.done() and publisher.answers == []
        # The attempt made now fails as well: then everything that waited fails with it.
        again.set_exception(ConnectionRefusedError())
        with pytest.raises(LinkDown):
            await reaching
        assert publisher.answers == [(1, False)]
        await link.close()

    asyncio.run(scenario())


def test_an_attempt_that_fails_unprompted_fails_what_waited() -> None:
    async def scenario() -> None:
        link, _network, under_way = await _down_link()
        reaching = await _begun(link.reach())  # it joins the attempt under way
        under_way.set_exception(ConnectionRefusedError())
        with pytest.raises(LinkDown):
            await reaching
        await link.close()

    asyncio.run(scenario())
