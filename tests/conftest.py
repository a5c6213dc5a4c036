"""Shared fixtures: a Leveret node per test, in-process, on an ephemeral port."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pika
import pytest

from tests.support.node import InProcessNode


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("LEVERET_SLOW") == "1":
        return
    skip_slow = pytest.mark.skip(reason="slow test: set LEVERET_SLOW=1 to run it")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip_slow)


@pytest.fixture
def node() -> Iterator[InProcessNode]:
    running = InProcessNode()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def connection(node: InProcessNode) -> Iterator[pika.BlockingConnection]:
    conn = pika.BlockingConnection(pika.URLParameters(node.url))
    try:
        yield conn
    finally:
        if conn.is_open:
            conn.close()


@pytest.fixture
def channel(connection: pika.BlockingConnection) -> pika.adapters.blocking_connection.BlockingChannel:
    return connection.channel()
