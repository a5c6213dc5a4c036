"""Policies against x-arguments and operator policies: who wins, as RabbitMQ decides it."""

from __future__ import annotations

import base64
import json
import time
import urllib.request
from typing import Any

import pika
import pytest

from tests.support.node import InProcessNode, wait_for


def _api(node: InProcessNode, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    request = urllib.request.Request(
        f"http://127.0.0.1:{node.node.ports['mgmt']}{path}",
        data=json.dumps(body).encode() if body is not None else None,
        method=method,
        headers={
            "Authorization": "Basic " + base64.b64encode(b"guest:guest").decode(),
            "Content-Type": "application/json",
        },
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        payload = response.read()
    return json.loads(payload) if payload else None


def _fill(channel, queue: str, count: int) -> list[bytes]:
    for i in range(count):
        channel.basic_publish("", queue, str(i).encode())
    got = []
    while True:
        method, _, body = channel.basic_get(queue, auto_ack=True)
        if method is None:
            return got
        got.append(body)


def _policy(
    node: InProcessNode,
    name: str,
    pattern: str,
    definition: dict[str, Any],
    *,
    operator: bool = False,
    priority: int = 0,
) -> None:
    kind = "operator-policies" if operator else "policies"
    _api(
        node,
        "PUT",
        f"/api/{kind}/%2F/{name}",
        {"pattern": pattern, "definition": definition, "apply-to": "queues", "priority": priority},
    )


@pytest.mark.parametrize(
    ("argument", "policy", "operator", "kept"),
    [
        (3, 5, None, 3),  # the smaller wins: the argument
        (10, 2, None, 2),  # the smaller wins: the policy
        (10, 5, 1, 1),  # an operator policy caps both
        (None, 4, None, 4),
    ],
)
def test_max_length_minimum_wins(
    node: InProcessNode, channel, argument, policy, operator, kept
) -> None:
    _policy(node, "p", "^lim$", {"max-length": policy})
    if operator is not None:
        _policy(node, "op", "^lim$", {"max-length": operator}, operator=True)
    arguments = {"x-max-length": argument} if argument is not None else {}
    channel.queue_declare("lim", arguments=arguments)
    assert len(_fill(channel, "lim", 20)) == kept
    queue = _api(node, "GET", "/api/queues/%2F/lim")
    assert queue["policy"] == "p"
    # As RabbitMQ shows it: the policy merged with the operator policy, arguments apart.
    assert queue["effective_policy_definition"]["max-length"] == min(
        p for p in (policy, operator) if p
    )


def test_argument_wins_for_overflow_and_dead_letter_exchange(node: InProcessNode, channel) -> None:
    _policy(
        node,
        "p",
        "^ovf$",
        {"overflow": "reject-publish", "dead-letter-exchange": "nowhere", "max-length": 1},
    )
    channel.queue_declare("ovf", arguments={"x-overflow": "drop-head"})
    assert _fill(channel, "ovf", 3) == [b"2"]  # drop-head from the argument, not reject-publish


def test_highest_priority_policy_applies_alone(node: InProcessNode, channel) -> None:
    _policy(node, "low", "^pq", {"max-length": 1}, priority=1)
    _policy(node, "high", "^pq", {"max-length": 3}, priority=5)
    channel.queue_declare("pq-1")
    assert len(_fill(channel, "pq-1", 10)) == 3
    assert _api(node, "GET", "/api/queues/%2F/pq-1")["policy"] == "high"


def test_policy_changes_apply_to_existing_queues(node: InProcessNode, channel) -> None:
    channel.queue_declare("live")
    for i in range(10):
        channel.basic_publish("", "live", str(i).encode())
    _policy(node, "cut", "^live$", {"max-length": 4})
    wait_for(lambda: channel.queue_declare("live", passive=True).method.message_count == 4)
    _api(node, "DELETE", "/api/policies/%2F/cut")
    assert len(_fill(channel, "live", 10)) == 14


def test_message_ttl_from_policy(node: InProcessNode, channel) -> None:
    _policy(node, "ttl", "^ttl-by-policy$", {"message-ttl": 30})
    channel.queue_declare("ttl-by-policy")
    channel.basic_publish("", "ttl-by-policy", b"x")
    wait_for(
        lambda: channel.queue_declare("ttl-by-policy", passive=True).method.message_count == 0,
        timeout=5,
    )


def test_priority_queue_expired_low_priority_message_counts_until_head(channel) -> None:
    """Spec 002: an expired message behind higher priorities still counts; dropped at the head."""
    channel.queue_declare("prio-ttl", arguments={"x-max-priority": 5})
    channel.basic_publish("", "prio-ttl", b"high", pika.BasicProperties(priority=5))
    channel.basic_publish(
        "", "prio-ttl", b"low-expiring", pika.BasicProperties(priority=1, expiration="20")
    )
    deadline = time.monotonic() + 0.1
    while time.monotonic() < deadline:  # let the low-priority message's TTL pass
        channel.connection.process_data_events(time_limit=0.02)
    assert channel.queue_declare("prio-ttl", passive=True).method.message_count == 2
    _, _, body = channel.basic_get("prio-ttl", auto_ack=True)
    assert body == b"high"
    assert channel.basic_get("prio-ttl", auto_ack=True) == (None, None, None)
