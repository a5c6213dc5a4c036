"""Management answers the property tests found different from RabbitMQ 3.10.8's, pinned with
what RabbitMQ answered (tests/fuzz/test_mgmt_vs_rabbitmq.py compares them live)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fuzz.http_client import request
from tests.support.node import NodeProcess


@pytest.fixture(scope="module")
def mgmt_port() -> Iterator[int]:
    with NodeProcess() as node:
        yield node.ports["mgmt"]


@pytest.mark.parametrize("key", ["durable", "auto_delete"])
def test_a_queue_flag_that_is_not_a_boolean_is_refused(mgmt_port: int, key: str) -> None:
    answer = request(mgmt_port, "PUT", "/api/queues/%2F/flags", f'{{"{key}": "yes"}}'.encode())
    assert (answer.status, answer.json()) == (
        400,
        {"error": "bad_request", "reason": ["not_boolean", "yes"]},
    )
    assert request(mgmt_port, "GET", "/api/queues/%2F/flags").status == 404


def test_an_exchange_flag_that_is_not_a_boolean_is_refused(mgmt_port: int) -> None:
    answer = request(mgmt_port, "PUT", "/api/exchanges/%2F/flags", b'{"internal": 1}')
    assert (answer.status, answer.json()) == (
        400,
        {"error": "bad_request", "reason": ["not_boolean", 1]},
    )


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("PUT", "/api/queues/no-such-vhost/q", b"{}"),
        ("PUT", "/api/exchanges/no-such-vhost/x", b'{"type": "direct"}'),
        ("POST", "/api/bindings/no-such-vhost/e/amq.direct/q/q", b"{}"),
    ],
)
def test_a_declare_in_an_unknown_vhost_is_vhost_not_found(
    mgmt_port: int, method: str, path: str, body: bytes
) -> None:
    answer = request(mgmt_port, method, path, body)
    assert (answer.status, answer.json()) == (
        404,
        {"error": "not_found", "reason": "vhost_not_found"},
    )


@pytest.mark.parametrize("dots", ["..", "%2E%2E", "%2e%2e", "./.."])
def test_dot_segments_are_resolved_not_taken_for_names(mgmt_port: int, dots: str) -> None:
    assert request(mgmt_port, "PUT", "/api/queues/%2F/dots", b"{}").status in (201, 204)
    answer = request(mgmt_port, "GET", f"/api/queues/%2F/{dots}")
    assert answer.status == 200
    assert "dots" in [queue["name"] for queue in answer.json()]


@pytest.mark.parametrize(
    "path", ["/api/permissions/no-such-vhost/guest", "/api/permissions/%2F/nobody"]
)
def test_permissions_for_an_unknown_user_or_vhost_are_refused_before_the_body_is_read(
    mgmt_port: int, path: str
) -> None:
    answer = request(mgmt_port, "PUT", path, b'{"configure": ".*"}')
    assert (answer.status, answer.json()) == (
        400,
        {"error": "bad_request", "reason": "vhost_or_user_not_found"},
    )
