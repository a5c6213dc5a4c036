"""Concurrent declares, deletes and binds through every node, recorded for the
linearizability checker of cluster/metadata/linearizability.py.

AMQP tells less than the simulated clients of tests/cluster see: declare-ok does not say whether
the queue was made, and delete-ok comes whether or not it existed. `AmqpQueueModel` reads the
outcomes a client does see against cluster/metadata's `QueueNameModel`. Queues are durable and
differ in `x-max-length`, so two declares conflict (406) exactly when the model says so, and no
queue vanishes when its node restarts (a transient one would).
"""

from __future__ import annotations

import asyncio
import random
import re
import time
from collections import Counter
from collections.abc import Awaitable
from typing import Any

import aio_pika
import aiormq

from cluster.metadata.linearizability import Operation, QueueNameModel
from tests.faults.total_queue import _CLIENT_ERRORS, _close

_OPERATION_SECONDS = 8.0
_BIND_EXCHANGE = "amq.direct"


class AmqpQueueModel:
    """QueueNameModel with the outcomes an AMQP client observes.

    declare: "ok" (made or already there, equivalent), "conflict" (406), "home_down" (404: the
    queue exists, its home node is unreachable). delete: "ok" (deleted or never there),
    "home_down". bind: "ok" (the queue exists), "not_found", "home_down". Any other answer (a
    declare or delete refused with "no queue") is wrong.
    """

    def __init__(self) -> None:
        self._base = QueueNameModel()

    def initial(self) -> Any:
        return self._base.initial()

    def step(self, state: Any, op_input: Any, output: Any, known: bool) -> tuple[bool, Any]:
        kind = op_input[0]
        if kind == "bind":
            if not known:
                return True, state
            exists = state is not None
            return output == ("ok" if exists else "not_found") or (
                output == "home_down" and exists
            ), state
        if not known:
            return self._base.step(state, op_input, output, False)
        if output == "home_down":
            return state is not None, state
        if output == "ok":
            choices = ("created", "exists") if kind == "declare" else ("deleted", "not_found")
            for choice in choices:
                allowed, after = self._base.step(state, op_input, choice, True)
                if allowed:
                    return True, after
            return False, state
        if kind == "delete":
            return False, state  # a missing queue is deleted already: never "not_found"
        return self._base.step(state, op_input, output, True)


def _refusal(error: BaseException) -> str | None:
    """The outcome a broker's refusal tells, or None when it tells nothing certain."""
    text = str(error)
    if isinstance(error, aio_pika.exceptions.ChannelPreconditionFailed):
        return "conflict"
    if isinstance(error, aio_pika.exceptions.ChannelNotFoundEntity):
        return "home_down" if "is down or inaccessible" in text else "not_found"
    return None


def _reply_text(error: BaseException) -> str:
    """The reply text with the queue's name and the node's address left out, so that the
    same refusal counts once."""
    text = str(error.args[-1] if error.args else error)
    text = re.sub(r"'meta-r\d+-\d+'", "'Q'", text)
    return re.sub(r"@[\d.]+", "", text)


class MetadataClients:
    """One client per node, each keeping one operation in flight on a few queue names; names
    change every round, so that each name's history stays short for the checker."""

    def __init__(self, urls: list[str], seed: int, names_per_round: int = 3) -> None:
        self.urls = urls
        self.rng = random.Random(seed)
        self.names_per_round = names_per_round
        self.round = 0
        self.history: list[Operation] = []
        self.refused = 0
        # Every refusal's reply text, counted: what the clients of each side were told.
        self.refusals: Counter[str] = Counter()
        self._running = True
        self._tasks: list[asyncio.Task[None]] = []

    async def spawn(self) -> None:
        for node in range(len(self.urls)):
            self._tasks.append(asyncio.create_task(self._client(node)))

    async def stop(self) -> None:
        self._running = False
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()

    def next_round(self) -> None:
        self.round += 1

    async def _client(self, node: int) -> None:
        connection: aio_pika.abc.AbstractConnection | None = None
        channel: aio_pika.abc.AbstractChannel | None = None
        while self._running:
            try:
                if connection is None or connection.is_closed:
                    await _close(connection)
                    connection = await asyncio.wait_for(
                        aio_pika.connect(self.urls[node], timeout=3), 4
                    )
                    channel = None
                if channel is None or channel.is_closed:
                    channel = await asyncio.wait_for(connection.channel(), 4)
            except _CLIENT_ERRORS:
                await _close(connection)
                connection = None
                await asyncio.sleep(0.5)
                continue
            channel = await self._operate(node, channel)
            await asyncio.sleep(self.rng.uniform(0.02, 0.1))
        await _close(connection)

    async def _operate(
        self, node: int, channel: aio_pika.abc.AbstractChannel
    ) -> aio_pika.abc.AbstractChannel | None:
        """One operation; the channel to use next (None: open a new one)."""
        name = f"meta-r{self.round}-{self.rng.randrange(self.names_per_round)}"
        roll = self.rng.random()
        op_input: tuple[Any, ...]
        action: Awaitable[object]
        if roll < 0.5:
            length = self.rng.choice((10, 20))
            op_input = ("declare", ("max-length", length))
            action = channel.declare_queue(
                name, durable=True, arguments={"x-max-length": length}, timeout=_OPERATION_SECONDS
            )
        elif roll < 0.75:
            op_input = ("delete",)
            action = channel.queue_delete(name, timeout=_OPERATION_SECONDS)
        else:
            op_input = ("bind",)
            action = self._bind(channel, name)
        invoked = time.monotonic()
        client = f"c{node}"
        try:
            await asyncio.wait_for(action, _OPERATION_SECONDS + 1)
        except (aio_pika.exceptions.ChannelClosed, aiormq.exceptions.ChannelClosed) as error:
            outcome = _refusal(error)
            returned = time.monotonic()
            self.refusals[f"{op_input[0]}: {_reply_text(error)}"] += 1
            if outcome is None:
                # 541 (no majority within the timeout) and the like: it may still take effect.
                self.refused += 1
                self.history.append(Operation(client, name, op_input, invoked))
            else:
                self.history.append(Operation(client, name, op_input, invoked, returned, outcome))
            return None
        except _CLIENT_ERRORS:
            # Timed out or the connection went: the outcome is unknown.
            self.history.append(Operation(client, name, op_input, invoked))
            return None
        self.history.append(Operation(client, name, op_input, invoked, time.monotonic(), "ok"))
        return channel

    @staticmethod
    async def _bind(channel: aio_pika.abc.AbstractChannel, name: str) -> None:
        underlay = await channel.get_underlay_channel()
        await underlay.queue_bind(
            name, _BIND_EXCHANGE, routing_key=name, timeout=_OPERATION_SECONDS
        )
