"""A federation link to an AMQPS upstream, with a client certificate and SASL EXTERNAL."""

from __future__ import annotations

import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pika
import pytest

from tests.federation.test_queue_federation import http, links, publish, ready_count
from tests.support.certs import Authority
from tests.support.node import NodeProcess, wait_for

LINK_USER = "CN=downstream-link,O=Leveret Tests"


@pytest.fixture
def tls_upstream(tmp_path: Path) -> Iterator[tuple[NodeProcess, Authority]]:
    authority = Authority(tmp_path / "ca")
    server = authority.server()
    config = tmp_path / "upstream.toml"
    config.write_text(
        "[ssl_options]\n"
        f'cacertfile = "{authority.certfile}"\n'
        f'certfile = "{server.certfile}"\n'
        f'keyfile = "{server.keyfile}"\n'
        'verify = "verify_peer"\n'
        "fail_if_no_peer_cert = true\n"
    )
    node = NodeProcess(
        extra_args=["--node-name", "tls-up@localhost", "--config", str(config), "--amqps-port", "0"]
    ).start()
    try:
        yield node, authority
    finally:
        node.cleanup()


@pytest.fixture
def downstream() -> Iterator[NodeProcess]:
    node = NodeProcess(extra_args=["--node-name", "tls-down@localhost"]).start()
    try:
        yield node
    finally:
        node.cleanup()


def federate(downstream: NodeProcess, queue: str, uri: str) -> None:
    value = {"uri": uri, "prefetch-count": 10, "reconnect-delay": 1}
    path = f"/api/parameters/federation-upstream/%2F/{queue}"
    assert http(downstream, "PUT", path, {"value": value})[0] == 201
    policy = {
        "pattern": f"^{queue}$",
        "definition": {"federation-upstream": queue},
        "apply-to": "queues",
    }
    assert http(downstream, "PUT", f"/api/policies/%2F/{queue}", policy)[0] == 201


def consume(node: NodeProcess, queue: str, count: int) -> list[bytes]:
    received: list[bytes] = []
    with pika.BlockingConnection(pika.URLParameters(node.url)) as conn:
        channel = conn.channel()
        channel.queue_declare(queue, durable=True)

        def take(ch: Any, method: Any, _properties: Any, body: bytes) -> None:
            received.append(body)
            ch.basic_ack(method.delivery_tag)

        channel.basic_consume(queue, take)
        deadline = time.monotonic() + 20
        while len(received) < count and time.monotonic() < deadline:
            conn.process_data_events(time_limit=0.1)
    return received


def test_a_link_over_amqps_logs_in_with_its_client_certificate(
    tls_upstream: tuple[NodeProcess, Authority], downstream: NodeProcess
) -> None:
    upstream, authority = tls_upstream
    client = authority.issue("link", "downstream-link", client=True)
    user = urllib.parse.quote(LINK_USER, safe="")
    assert http(upstream, "PUT", f"/api/users/{user}", {"password": "x", "tags": ""})[0] == 201
    grant = {"configure": ".*", "write": ".*", "read": ".*"}
    assert http(upstream, "PUT", f"/api/permissions/%2F/{user}", grant)[0] == 201
    queue = "tls.jobs"
    with pika.BlockingConnection(pika.URLParameters(upstream.url)) as conn:
        conn.channel().queue_declare(queue, durable=True)
    publish(upstream, queue, [f"m{n}".encode() for n in range(10)])
    query = urllib.parse.urlencode(
        {
            "cacertfile": authority.certfile,
            "certfile": client.certfile,
            "keyfile": client.keyfile,
            "verify": "verify_peer",
            "server_name_indication": "localhost",
            "auth_mechanism": "external",
        }
    )
    federate(downstream, queue, f"amqps://127.0.0.1:{upstream.ports['amqps']}?{query}")
    received = consume(downstream, queue, 10)
    assert sorted(received) == sorted(f"m{n}".encode() for n in range(10))
    assert ready_count(upstream, queue) == 0
    [link] = links(downstream)
    assert link["status"] == "running"
    assert link["uri"].startswith(f"amqps://127.0.0.1:{upstream.ports['amqps']}")
    _, connections = http(upstream, "GET", "/api/connections")
    [seen] = [c for c in connections if c["user"] == LINK_USER]
    assert seen["ssl"] is True and seen["auth_mechanism"] == "EXTERNAL"
    assert seen["peer_cert_subject"] == LINK_USER


def test_a_link_without_a_client_certificate_reports_the_error(
    tls_upstream: tuple[NodeProcess, Authority], downstream: NodeProcess
) -> None:
    upstream, authority = tls_upstream
    query = urllib.parse.urlencode({"cacertfile": authority.certfile, "verify": "verify_peer"})
    # 127.0.0.1 is in the server certificate's names, so only the missing certificate fails.
    federate(downstream, "tls.bare", f"amqps://127.0.0.1:{upstream.ports['amqps']}?{query}")
    with pika.BlockingConnection(pika.URLParameters(downstream.url)) as conn:
        conn.channel().queue_declare("tls.bare", durable=True)
        wait_for(lambda: [link["status"] for link in links(downstream)] == ["error"], 15, 0.1)
    [link] = links(downstream)
    assert "certificate" in link["error"].lower() or "connection lost" in link["error"]
    wait_for(lambda: "PEER_DID_NOT_RETURN_A_CERTIFICATE" in upstream.log_tail(100))


def test_a_link_checks_the_upstream_certificate(
    tls_upstream: tuple[NodeProcess, Authority], downstream: NodeProcess, tmp_path: Path
) -> None:
    upstream, _ = tls_upstream
    stranger = Authority(tmp_path / "stranger", "Stranger CA")
    query = urllib.parse.urlencode({"cacertfile": stranger.certfile})
    federate(downstream, "tls.mistrust", f"amqps://127.0.0.1:{upstream.ports['amqps']}?{query}")
    with pika.BlockingConnection(pika.URLParameters(downstream.url)) as conn:
        conn.channel().queue_declare("tls.mistrust", durable=True)
        wait_for(lambda: [link["status"] for link in links(downstream)] == ["error"], 15, 0.1)
    [link] = links(downstream)
    assert "certificate verify failed" in link["error"]
