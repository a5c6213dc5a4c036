"""Brokers for the limit tests: a Leveret node and a RabbitMQ 3.10.8 with management."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.support.node import InProcessNode
from tests.support.rabbitmq import require_rabbitmq, start_rabbitmq


@dataclass(frozen=True)
class Broker:
    """What a side-by-side test needs of either broker."""

    kind: str
    amqp_port: int
    mgmt_port: int

    def url(self, user: str = "guest", password: str = "guest", vhost: str = "%2F") -> str:
        return f"amqp://{user}:{password}@127.0.0.1:{self.amqp_port}/{vhost}"

    def http(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """(status, decoded JSON body or None), as guest."""
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.mgmt_port}{path}", data=data, method=method
        )
        request.add_header("Authorization", "Basic " + base64.b64encode(b"guest:guest").decode())
        request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, raw = error.code, error.read()
        return status, json.loads(raw) if raw else None


@pytest.fixture(scope="module")
def rabbitmq_mgmt() -> Iterator[Broker]:
    require_rabbitmq()
    with start_rabbitmq(management=True) as node:
        assert node.mgmt_port is not None
        yield Broker("rabbitmq", node.amqp_port, node.mgmt_port)


@pytest.fixture(scope="module")
def leveret() -> Iterator[Broker]:
    node = InProcessNode()
    try:
        yield Broker("leveret", node.port, node.node.ports["mgmt"])
    finally:
        node.stop()


@pytest.fixture(params=["leveret", "rabbitmq"])
def broker(request: pytest.FixtureRequest) -> Iterator[Broker]:
    """Each test runs against both; it leaves no limit behind."""
    found: Broker = request.getfixturevalue(
        "leveret" if request.param == "leveret" else "rabbitmq_mgmt"
    )
    yield found
    for name in ("max-connections", "max-queues"):
        found.http("DELETE", f"/api/vhost-limits/%2F/{name}")
    for name in ("max-connections", "max-channels"):
        found.http("DELETE", f"/api/user-limits/guest/{name}")
