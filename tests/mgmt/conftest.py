"""A node with its management listener started on the node's loop, and an HTTP client for it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pika
import pytest

from leveret.mgmt import management_state, start_management
from leveret.mgmt.server import ManagementServer
from tests.mgmt.scenario import Api
from tests.support.node import InProcessNode


@dataclass
class ManagedNode:
    node: InProcessNode
    server: ManagementServer
    api: Api
    mgmt_port: int

    @property
    def amqp_port(self) -> int:
        return self.node.port

    @property
    def broker(self) -> Any:
        return self.node.broker

    @property
    def url(self) -> str:
        return f"http://guest:guest@127.0.0.1:{self.mgmt_port}"

    def stop(self) -> None:
        async def close() -> None:
            self.server.close()
            await self.server.wait_closed()

        try:
            asyncio.run_coroutine_threadsafe(close(), self.node.loop).result(10)
        finally:
            self.node.stop()


def start_managed_node(**config: Any) -> ManagedNode:
    node = InProcessNode(**config)
    try:
        server = asyncio.run_coroutine_threadsafe(
            start_management(node.broker, "127.0.0.1", 0, listeners=node.node.ports), node.loop
        ).result(10)
    except BaseException:
        node.stop()
        raise
    port = server.sockets[0].getsockname()[1]
    return ManagedNode(node, server, Api("127.0.0.1", port), port)


@pytest.fixture
def managed() -> Iterator[ManagedNode]:
    running = start_managed_node()
    try:
        yield running
    finally:
        running.stop()


@contextmanager
def amqp_connection(
    managed: ManagedNode,
    user: str = "guest",
    password: str = "guest",
    vhost: str = "/",
    **options: Any,
) -> Iterator[pika.BlockingConnection]:
    params = pika.ConnectionParameters(
        "127.0.0.1",
        managed.amqp_port,
        vhost,
        pika.PlainCredentials(user, password),
        heartbeat=0,
        **options,
    )
    connection = pika.BlockingConnection(params)
    try:
        yield connection
    finally:
        if connection.is_open:
            connection.close()


def sample_statistics(managed: ManagedNode) -> None:
    """Take a statistics sample now, as the collector does every few seconds."""
    managed.node.call(lambda: management_state(managed.broker).sample())
