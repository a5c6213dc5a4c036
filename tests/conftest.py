"""Shared fixtures: a Leveret node per test, in-process, on an ephemeral port; one RabbitMQ node."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pika
import pytest

from tests.support.node import InProcessNode

# Imported here only: each module importing a session fixture gets its own (a RabbitMQ start each).
from tests.support.rabbitmq import rabbitmq  # noqa: F401 - fixture


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Slow variants run only with LEVERET_SLOW=1; otherwise they are deselected, not skipped."""
    if os.environ.get("LEVERET_SLOW") == "1":
        return
    slow = [item for item in items if "slow" in item.keywords]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if "slow" not in item.keywords]


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
def channel(
    connection: pika.BlockingConnection,
) -> pika.adapters.blocking_connection.BlockingChannel:
    return connection.channel()
