"""aio-pika's RPC patterns against a node: register, call, errors, expiry, and a clean close."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import aio_pika
import pytest
from aio_pika.exceptions import MessageProcessError
from aio_pika.patterns import RPC, JsonRPC
from aio_pika.patterns.rpc import JsonRPCError

from tests.support.node import InProcessNode

T = TypeVar("T")
# No scenario here needs more than a few seconds; a hang fails the test instead of the run.
SCENARIO_SECONDS = 30.0


def run(scenario: Callable[[], Awaitable[T]]) -> T:
    async def bounded() -> T:
        async with asyncio.timeout(SCENARIO_SECONDS):
            return await scenario()

    return asyncio.run(bounded())


def queue_names(node: InProcessNode) -> set[str]:
    return node.call(lambda: set(node.broker.vhosts["/"].queues))


async def multiply(*, x: int, y: int) -> int:
    return x * y


async def refuse(*, why: str) -> None:
    raise ValueError(why)


def test_rpc_calls_a_registered_method_and_closes_cleanly(node: InProcessNode) -> None:
    async def scenario() -> None:
        connection = await aio_pika.connect(node.url)
        async with connection:
            channel = await connection.channel()
            rpc = await RPC.create(channel)
            result_queue = rpc.result_queue.name
            await rpc.register("multiply", multiply, auto_delete=True)
            await rpc.register("refuse", refuse, auto_delete=True)
            assert [await rpc.call("multiply", kwargs={"x": x, "y": 6}) for x in range(4)] == [
                0,
                6,
                12,
                18,
            ]
            calls = [rpc.call("multiply", kwargs={"x": x, "y": x}) for x in range(20)]
            assert await asyncio.gather(*calls) == [x * x for x in range(20)]
            # The handler's exception travels back to the caller.
            with pytest.raises(ValueError, match="not today"):
                await rpc.call("refuse", kwargs={"why": "not today"})
            # Nobody serves this method: the mandatory call comes back as basic.return.
            with pytest.raises(MessageProcessError, match="returned"):
                await rpc.call("nobody-serves-this")
            assert result_queue in queue_names(node)
            # close cancels the result consumer (the auto-delete queue goes with it), then
            # unbinds and deletes that queue: RabbitMQ answers both as if it were still there.
            await rpc.close()
            assert not channel.is_closed
            assert result_queue not in queue_names(node)
            # The channel still works after close.
            declared = await channel.declare_queue("after-rpc", auto_delete=True)
            assert declared.name == "after-rpc"

    run(scenario)


def test_an_unserved_call_expires_into_a_timeout(node: InProcessNode) -> None:
    """The call's queue dead-letters expired calls through RPC's headers exchange back to the
    caller, which hears a timeout."""

    async def scenario() -> None:
        connection = await aio_pika.connect(node.url)
        async with connection:
            channel = await connection.channel()
            rpc = await RPC.create(channel)
            await channel.declare_queue(
                "slow", auto_delete=True, arguments={"x-dead-letter-exchange": RPC.DLX_NAME}
            )
            with pytest.raises(TimeoutError) as expired:
                await rpc.call("slow", expiration=0.05)  # type: ignore[arg-type]
            assert expired.value.args[0] == "Message timed-out"
            await rpc.close()
            assert not channel.is_closed

    run(scenario)


def test_json_rpc(node: InProcessNode) -> None:
    async def scenario() -> None:
        connection = await aio_pika.connect(node.url)
        async with connection:
            channel = await connection.channel()
            rpc = await JsonRPC.create(channel)

            async def describe(*, name: str, tags: list[str]) -> dict[str, Any]:
                return {"name": name.upper(), "tags": sorted(tags), "count": len(tags)}

            await rpc.register("describe", describe, auto_delete=True)
            await rpc.register("refuse", refuse, auto_delete=True)
            answer = await rpc.call("describe", kwargs={"name": "léa", "tags": ["b", "a"]})
            assert answer == {"name": "LÉA", "tags": ["a", "b"], "count": 2}
            with pytest.raises(JsonRPCError) as refused:
                await rpc.call("refuse", kwargs={"why": "closed"})
            error = refused.value.args[1]["error"]
            assert error["type"] == "ValueError" and error["args"] == ["closed"]
            await rpc.close()
            assert not channel.is_closed

    run(scenario)
