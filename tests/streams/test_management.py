"""Streams through the management API, side by side with RabbitMQ 3.10.8's: declares and their
refusals, what a stream shows, and the 400s for reading and purging one."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.node import InProcessNode, wait_for
from tests.support.rabbitmq import RabbitNode, require_rabbitmq, start_rabbitmq

_AUTH = "Basic " + base64.b64encode(b"guest:guest").decode()


@pytest.fixture(scope="module")
def rabbit_with_management() -> Iterator[RabbitNode]:
    require_rabbitmq()
    with start_rabbitmq(management=True) as node:
        yield node


def _call(port: int, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"content-type": "application/json", "Authorization": _AUTH},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            status, raw = answer.status, answer.read()
    except urllib.error.HTTPError as refused:
        status, raw = refused.code, refused.read()
    return status, json.loads(raw) if raw else None


def _session(port: int, starts_a_member: bool) -> list[Any]:
    stream = {"durable": True, "arguments": {"x-queue-type": "stream", "x-max-age": "1D"}}
    seen: list[Any] = [
        _call(port, "PUT", "/api/queues/%2F/mgmt-s", stream),
        _call(port, "PUT", "/api/queues/%2F/mgmt-s", stream),
        _call(port, "PUT", "/api/queues/%2F/mgmt-s", {**stream, "arguments": {}}),
        _call(
            port,
            "PUT",
            "/api/queues/%2F/mgmt-bad",
            {"durable": False, "arguments": {"x-queue-type": "stream"}},
        ),
        _call(
            port,
            "PUT",
            "/api/queues/%2F/mgmt-bad",
            {"durable": True, "arguments": {"x-queue-type": "stream", "x-max-priority": 2}},
        ),
    ]
    if starts_a_member:
        # RabbitMQ's declare-ok does not wait for the stream's member to start, and a get that
        # comes before it can answer 500; the member shows as online once it runs.
        wait_for(lambda: _call(port, "GET", "/api/queues/%2F/mgmt-s")[1].get("online"), 30)
    status, shown = _call(port, "GET", "/api/queues/%2F/mgmt-s")
    seen.append((status, {key: shown[key] for key in ("type", "arguments", "durable")}))
    get = {"count": 1, "ackmode": "ack_requeue_true", "encoding": "auto"}
    seen.append(_call(port, "POST", "/api/queues/%2F/mgmt-s/get", get))
    seen.append(_call(port, "DELETE", "/api/queues/%2F/mgmt-s/contents"))
    seen.append(_call(port, "DELETE", "/api/queues/%2F/mgmt-s?if-empty=true&if-unused=true"))
    seen.append(_call(port, "GET", "/api/queues/%2F/mgmt-s")[0])
    return seen


def test_management_answers_as_rabbitmqs(rabbit_with_management: RabbitNode) -> None:
    assert rabbit_with_management.mgmt_port is not None
    expected = _session(rabbit_with_management.mgmt_port, starts_a_member=True)
    node = InProcessNode()
    try:
        got = _session(node.node.ports["mgmt"], starts_a_member=False)
    finally:
        node.stop()
    assert got == expected
