"""A sample of hostile management requests sent to RabbitMQ 3.10.8 and to Leveret: the same
status code and the same body from both."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fuzz.http_client import request
from tests.support.node import NodeProcess
from tests.support.rabbitmq import RabbitNode, require_rabbitmq, start_rabbitmq

pytestmark = pytest.mark.rabbitmq

# (method, path, body): malformed JSON, wrong types, path traversal, unknown vhosts.
SAMPLE: list[tuple[str, str, bytes | None]] = [
    ("PUT", "/api/queues/%2F/fz-q", b"{"),
    ("PUT", "/api/queues/%2F/fz-q", b"[]"),
    ("PUT", "/api/queues/%2F/fz-q", b'{"durable": "yes"}'),
    ("PUT", "/api/queues/%2F/fz-q", b'{"arguments": []}'),
    ("PUT", "/api/queues/%2F/fz-q", b'{"arguments": {"x-max-length": "ten"}}'),
    ("PUT", "/api/queues/no-such-vhost/fz-q", b"{}"),
    ("GET", "/api/queues/no-such-vhost", None),
    ("GET", "/api/queues/%2F/..", None),
    ("GET", "/api/queues/%2F/%2E%2E", None),
    ("GET", "/api/queues/..%2F..%2Fetc", None),
    ("GET", "/api/queues/%2F/a%2Fb", None),
    ("DELETE", "/api/queues/%2F/no-such-queue", None),
    ("PUT", "/api/exchanges/%2F/fz-x", b'{"type": 5}'),
    ("PUT", "/api/exchanges/%2F/fz-x", b'{"type": "no-such-type"}'),
    ("PUT", "/api/exchanges/no-such-vhost/fz-x", b'{"type": "direct"}'),
    ("GET", "/api/exchanges/%2F/no-such-exchange", None),
    ("PUT", "/api/vhosts/fz-vhost", b"not json"),
    ("GET", "/api/vhosts/no-such-vhost", None),
    ("PUT", "/api/users/fz-user", b"{}"),
    ("PUT", "/api/users/fz-user", b'{"password": 5, "tags": ""}'),
    ("PUT", "/api/users/fz-user", b'{"password": "p", "tags": 7}'),
    ("GET", "/api/users/no-such-user", None),
    ("PUT", "/api/permissions/no-such-vhost/guest", b'{"configure": ".*"}'),
    ("PUT", "/api/permissions/%2F/no-such-user", b'{"configure": ".*"}'),
    ("PUT", "/api/policies/%2F/fz-p", b'{"pattern": ".*"}'),
    ("PUT", "/api/policies/%2F/fz-p", b'{"pattern": ".*", "definition": []}'),
    ("PUT", "/api/policies/%2F/fz-p", b'{"pattern": "(", "definition": {"max-length": 1}}'),
    ("PUT", "/api/policies/no-such-vhost/fz-p", b'{"pattern": ".*", "definition": {}}'),
    ("POST", "/api/bindings/%2F/e/amq.direct/q/no-such-queue", b'{"routing_key": 5}'),
    ("POST", "/api/bindings/no-such-vhost/e/amq.direct/q/q", b"{}"),
    ("POST", "/api/queues/%2F/no-such-queue/get", b'{"count": "x"}'),
    ("POST", "/api/exchanges/%2F/amq.direct/publish", b'{"routing_key": "x"}'),
    ("POST", "/api/definitions", b"{"),
    ("POST", "/api/definitions", b'{"queues": 5}'),
    ("GET", "/api/aliveness-test/no-such-vhost", None),
    ("DELETE", "/api/connections/no-such-connection", None),
    ("GET", "/api/no-such-route", None),
]


# Where RabbitMQ 3.10.8 crashes (a 500, or an Erlang exit in the reason) Leveret answers a
# plain 400 instead; where the reason is a library's message (PCRE's), it is its own; and where
# RabbitMQ looks the queue up before it reads the body, Leveret reads the body first.
DIVERGENT = {
    ("PUT", "/api/exchanges/%2F/fz-x", b'{"type": 5}'): "RabbitMQ's reason is an Erlang exit",
    ("PUT", "/api/users/fz-user", b'{"password": 5, "tags": ""}'): "RabbitMQ answers 500",
    ("PUT", "/api/users/fz-user", b'{"password": "p", "tags": 7}'): "RabbitMQ answers 500",
    ("PUT", "/api/policies/%2F/fz-p", b'{"pattern": ".*", "definition": []}'): "a 500 there",
    ("POST", "/api/definitions", b'{"queues": 5}'): "RabbitMQ answers 500",
    (
        "PUT",
        "/api/policies/%2F/fz-p",
        b'{"pattern": "(", "definition": {"max-length": 1}}',
    ): "PCRE's message, not Python's",
    (
        "POST",
        "/api/bindings/%2F/e/amq.direct/q/no-such-queue",
        b'{"routing_key": 5}',
    ): "RabbitMQ finds the queue missing before it reads the body",
}


def _comparable(body: Any) -> Any:
    """Listings are compared by the names they list: their figures change by the second."""
    if isinstance(body, list) and all(isinstance(item, dict) for item in body):
        return sorted(str(item.get("name")) for item in body)
    return body


def _answers(port: int) -> list[tuple[int, Any]]:
    found = []
    for method, path, body in SAMPLE:
        answer = request(port, method, path, body)
        try:
            parsed = answer.json()
        except ValueError:
            parsed = answer.body.decode("utf-8", "replace")
        found.append((answer.status, _comparable(parsed)))
    return found


@pytest.fixture(scope="module")
def rabbitmq_answers() -> Iterator[list[tuple[int, Any]]]:
    require_rabbitmq()
    node: RabbitNode = start_rabbitmq(management=True)
    try:
        assert node.mgmt_port is not None
        yield _answers(node.mgmt_port)
    finally:
        node.stop()


def test_hostile_requests_get_rabbitmqs_status_and_body(
    rabbitmq_answers: list[tuple[int, Any]],
) -> None:
    with NodeProcess() as node:
        ours = _answers(node.ports["mgmt"])
    differences = []
    for case, theirs, mine in zip(SAMPLE, rabbitmq_answers, ours, strict=True):
        if case in DIVERGENT:
            # Never a crash here: a client error with RabbitMQ's body shape.
            assert 400 <= mine[0] < 500 and {"error", "reason"} <= mine[1].keys(), (case, mine)
            assert theirs[0] >= 500 or theirs != mine, f"{case} agrees now: drop it from DIVERGENT"
        elif theirs != mine:
            differences.append(f"{case}:\n  RabbitMQ {theirs}\n  Leveret  {mine}")
    assert not differences, "\n".join(differences)


if __name__ == "__main__":  # print RabbitMQ's answers, to study a difference
    rabbit = start_rabbitmq(management=True)
    try:
        assert rabbit.mgmt_port is not None
        for case, answer in zip(SAMPLE, _answers(rabbit.mgmt_port), strict=True):
            print(json.dumps([case[0], case[1], (case[2] or b"").decode(), *answer]))
    finally:
        rabbit.stop()
