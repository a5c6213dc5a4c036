"""Property tests of the management API over real HTTP: every route, with malformed JSON,
wrong types, huge bodies, path traversal in names and unknown vhosts, gets a client error with
RabbitMQ's body shape, never a 500 or a traceback, and the node goes on serving."""

from __future__ import annotations

import json
from collections.abc import Iterator
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from leveret.mgmt.routes import API_ROUTES
from tests.fuzz.http_client import Answer, request
from tests.support.node import NodeProcess

# Names that must never reach the node's own objects: the tests change nothing they rely on.
PROTECTED = {"/", "guest", "amq.direct", "amq.fanout", "amq.topic", "amq.headers"}

HOSTILE_NAMES = st.one_of(
    st.sampled_from(
        [
            "..",
            "%2E%2E",
            "../..",
            "..%2F..",
            "%2F",
            "%2F%2F",
            "a%2F..%2Fb",
            "%00",
            "%FF",
            "%",
            "%zz",
            "no-such-vhost",
            "x" * 300,
            "%C3%A9t%C3%A9",
            "amq.gen-x",
        ]
    ),
    st.text(min_size=1, max_size=40).map(lambda text: quote(text, safe="")),
)

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)

# Keys the API's bodies use, given values of every type.
KEYS = [
    "durable",
    "auto_delete",
    "arguments",
    "type",
    "internal",
    "pattern",
    "definition",
    "priority",
    "apply-to",
    "password",
    "password_hash",
    "tags",
    "configure",
    "write",
    "read",
    "value",
    "routing_key",
    "payload",
    "payload_encoding",
    "properties",
    "count",
    "ackmode",
    "encoding",
    "truncate",
    "users",
    "name",
    "exchange",
]

BODIES = st.one_of(
    st.sampled_from(
        [b"", b"{", b"[", b"null", b"{}", b"[]", b'"x"', b"1e999", b"\xff\xfe", b'{"a":}']
    ),
    st.dictionaries(st.sampled_from(KEYS), JSON_VALUES, max_size=6).map(
        lambda body: json.dumps(body).encode()
    ),
    JSON_VALUES.map(lambda value: json.dumps(value).encode()),
    st.binary(max_size=200),
)

ROUTES = [(route.segments, method) for route in API_ROUTES for method in sorted(route.methods)]


@pytest.fixture(scope="module")
def node() -> Iterator[NodeProcess]:
    with NodeProcess() as running:
        yield running


def _path(segments: tuple[str, ...], names: list[str]) -> str:
    parts = []
    for index, segment in enumerate(segments):
        if segment.startswith("{"):
            parts.append(names[index % len(names)])
        else:
            parts.append(segment)
    return "/" + "/".join(parts)


def _check(answer: Answer, what: str) -> None:
    assert answer.status < 500 or answer.status == 503, (what, answer)
    assert b"Traceback" not in answer.body, (what, answer.body[:500])
    if answer.status >= 400 and answer.body and "json" in answer.content_type:
        body = answer.json()
        # RabbitMQ's error body, or its health checks' {"status": "failed", "reason": ...}.
        assert isinstance(body, dict) and "reason" in body, (what, body)
        assert "error" in body or body.get("status") == "failed", (what, body)


def _still_serving(node: NodeProcess) -> None:
    overview = request(node.ports["mgmt"], "GET", "/api/overview")
    assert overview.status == 200
    assert node.proc.poll() is None  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("segments", "method"), ROUTES, ids=lambda v: "/".join(v) if isinstance(v, tuple) else v
)
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(names=st.lists(HOSTILE_NAMES, min_size=1, max_size=4), body=BODIES)
def test_every_route_answers_hostile_input_with_a_client_error(
    node: NodeProcess, segments: tuple[str, ...], method: str, names: list[str], body: bytes
) -> None:
    if segments and segments[-1] == "drain":
        names = ["not-this-node"]  # the node's own name would drain it
    path = _path(segments, names)
    if any(name in PROTECTED for name in names):
        return
    answer = request(node.ports["mgmt"], method, path, body if method in ("PUT", "POST") else None)
    _check(answer, f"{method} {path} {body[:100]!r}")


def test_huge_bodies_do_not_break_the_node(node: NodeProcess) -> None:
    # Past management_http_max_body_size (RabbitMQ's 10,000,000 bytes) a body is refused with
    # RabbitMQ 3.10.8's 400, and the node goes on serving.
    huge = b'{"arguments": {"x": "' + b"y" * (32 * 1024 * 1024) + b'"}}'
    for method, path in (
        ("PUT", "/api/queues/%2F/huge"),
        ("POST", "/api/definitions"),
        ("PUT", "/api/users/huge"),
        ("PUT", "/api/policies/%2F/huge"),
    ):
        answer = request(node.ports["mgmt"], method, path, huge)
        _check(answer, f"{method} {path} (32 MiB)")
        assert answer.status == 400, (method, path, answer)
        assert answer.json()["reason"] == "Exceeded HTTP request body size limit"
    _still_serving(node)


def test_the_node_log_has_no_traceback_after_the_properties(node: NodeProcess) -> None:
    _still_serving(node)
    log = node.log_tail(1_000_000)
    assert "Traceback" not in log, log[-4000:]
