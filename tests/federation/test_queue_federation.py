"""Federated queues between two Leveret nodes: upstream parameters, demand-driven links, status."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

import pika
import pytest

from tests.support.node import NodeProcess, wait_for

QUEUE = "fed.jobs"


def http(node: NodeProcess, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        f"http://127.0.0.1:{node.ports['mgmt']}{path}", data=data, method=method
    )
    request.add_header("Authorization", "Basic " + base64.b64encode(b"guest:guest").decode())
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            text = response.read()
            return response.status, json.loads(text) if text else None
    except urllib.error.HTTPError as error:
        text = error.read()
        return error.code, json.loads(text) if text else None


@pytest.fixture(scope="module")
def pair() -> Iterator[tuple[NodeProcess, NodeProcess]]:
    upstream = NodeProcess(extra_args=["--node-name", "upstream@localhost"]).start()
    downstream = NodeProcess(extra_args=["--node-name", "downstream@localhost"]).start()
    try:
        yield upstream, downstream
    finally:
        for node in (upstream, downstream):
            node.cleanup()


def ready_count(node: NodeProcess, queue: str) -> int:
    with pika.BlockingConnection(pika.URLParameters(node.url)) as conn:
        return conn.channel().queue_declare(queue, passive=True).method.message_count


def publish(node: NodeProcess, queue: str, bodies: list[bytes]) -> None:
    with pika.BlockingConnection(pika.URLParameters(node.url)) as conn:
        channel = conn.channel()
        channel.confirm_delivery()
        for body in bodies:
            channel.basic_publish(
                "", queue, body, pika.BasicProperties(delivery_mode=2, message_id=body.decode())
            )


def ctl(node: NodeProcess, *args: str) -> str:
    url = f"http://guest:guest@127.0.0.1:{node.ports['mgmt']}"
    done = subprocess.run(
        [sys.executable, "-m", "leveret", "ctl", "--url", url, *args],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return done.stdout


def links(node: NodeProcess) -> list[dict[str, Any]]:
    status, found = http(node, "GET", "/api/federation-links")
    assert status == 200
    return list(found)


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ({}, 'Key "uri" not found in u1'),
        ({"uri": 5}, "uri should be list, actually was 5"),
        (
            {"uri": "amqp://x", "ack-mode": "bogus"},
            'ack-mode should be one of [&lt;&lt;"no-ack"&gt;&gt;,&lt;&lt;"on-publish"&gt;&gt;,'
            '&lt;&lt;"on-confirm"&gt;&gt;], actually was &lt;&lt;"bogus"&gt;&gt;',
        ),
        (
            {"uri": "amqp://x", "prefetch-count": "ten"},
            'prefetch-count should be a number, actually was &lt;&lt;"ten"&gt;&gt;',
        ),
        ({"uri": "amqp://x", "queue": 5}, "queue should be binary, actually was 5"),
        (
            {"uri": "amqp://x", "trust-user-id": "yes"},
            'trust-user-id should be boolean, actually was &lt;&lt;"yes"&gt;&gt;',
        ),
        (
            {"uri": "amqp://x", "bogus-key": 1},
            'Unrecognised terms [{&lt;&lt;"bogus-key"&gt;&gt;,1}] in u1',
        ),
        (
            {"uri": "notauri"},
            '"notauri" not a valid URI: {{unable_to_parse_uri,no_scheme},"notauri"}',
        ),
    ],
)
def test_upstream_parameters_refused_with_rabbitmqs_texts(
    pair: tuple[NodeProcess, NodeProcess], value: dict[str, Any], reason: str
) -> None:
    _, downstream = pair
    status, body = http(
        downstream, "PUT", "/api/parameters/federation-upstream/%2F/u1", {"value": value}
    )
    assert (status, body) == (
        400,
        {"error": "bad_request", "reason": f"Validation failed\n\n{reason}\n"},
    )


def test_upstream_sets_and_policies_validated(pair: tuple[NodeProcess, NodeProcess]) -> None:
    _, downstream = pair
    set_path = "/api/parameters/federation-upstream-set/%2F/s1"
    assert http(downstream, "PUT", set_path, {"value": [{}]}) == (
        400,
        {"error": "bad_request", "reason": 'Validation failed\n\nKey "upstream" not found in s1\n'},
    )
    assert http(downstream, "PUT", set_path, {"value": [{"upstream": "u1"}]})[0] == 201
    exchange_only = {"uri": ["amqp://a", "amqp://b"], "exchange": "e", "max-hops": 2}
    assert http(
        downstream, "PUT", "/api/parameters/federation-upstream/%2F/u1", {"value": exchange_only}
    )[0] in (201, 204)
    status, body = http(
        downstream,
        "PUT",
        "/api/policies/%2F/both",
        {
            "pattern": "^x",
            "definition": {"federation-upstream": "u1", "federation-upstream-set": "all"},
        },
    )
    assert status == 400
    assert "cannot specify federation-upstream, federation-upstream-set" in body["reason"]
    for path in (set_path, "/api/parameters/federation-upstream/%2F/u1"):
        assert http(downstream, "DELETE", path)[0] == 204


def test_messages_move_only_on_downstream_demand(pair: tuple[NodeProcess, NodeProcess]) -> None:
    upstream, downstream = pair
    with pika.BlockingConnection(pika.URLParameters(upstream.url)) as conn:
        conn.channel().queue_declare(QUEUE, durable=True)
    publish(upstream, QUEUE, [f"m{number}".encode() for number in range(20)])
    uri = upstream.url
    assert (
        http(
            downstream,
            "PUT",
            "/api/parameters/federation-upstream/%2F/origin",
            {"value": {"uri": uri, "prefetch-count": 5, "reconnect-delay": 1}},
        )[0]
        == 201
    )
    assert (
        http(
            downstream,
            "PUT",
            "/api/policies/%2F/federate",
            {
                "pattern": r"^fed\.",
                "definition": {"federation-upstream": "origin"},
                "apply-to": "queues",
            },
        )[0]
        == 201
    )
    with pika.BlockingConnection(pika.URLParameters(downstream.url)) as conn:
        channel = conn.channel()
        channel.queue_declare(QUEUE, durable=True)
        wait_for(lambda: [link["status"] for link in links(downstream)] == ["running"], 15, 0.1)
        [link] = links(downstream)
        assert link["queue"] == link["upstream_queue"] == QUEUE
        assert link["upstream"] == "origin" and link["type"] == "queue"
        assert link["uri"] == f"amqp://127.0.0.1:{upstream.ports['amqp']}/"
        assert link["consumer_tag"] == "federation-link-origin"
        assert link["demand"] == "waiting"
        # No consumer here: nothing moves, and basic.get never pulls.
        time.sleep(1.5)
        assert channel.basic_get(QUEUE, auto_ack=True) == (None, None, None)
        assert ready_count(upstream, QUEUE) == 20

        channel.basic_qos(prefetch_count=5)
        received: list[tuple[bytes, Any]] = []

        def take(ch: Any, method: Any, properties: Any, body: bytes) -> None:
            received.append((body, properties.headers))
            ch.basic_ack(method.delivery_tag)

        channel.basic_consume(QUEUE, take)
        deadline = time.monotonic() + 20
        while len(received) < 20 and time.monotonic() < deadline:
            conn.process_data_events(time_limit=0.1)
        assert sorted(body for body, _ in received) == sorted(
            f"m{number}".encode() for number in range(20)
        )
        headers = received[0][1]
        assert headers["x-original-exchange"] == "" and headers["x-original-routing-key"] == QUEUE
        assert headers["x-received-from"] == [
            {
                "uri": f"amqp://127.0.0.1:{upstream.ports['amqp']}/",
                "queue": QUEUE,
                "redelivered": False,
                "visit-count": 1,
            }
        ]
        wait_for(lambda: ready_count(upstream, QUEUE) == 0, 10, 0.1)
        channel.cancel()
    # The consumer is gone: what is published upstream now stays there.
    wait_for(lambda: links(downstream)[0].get("demand") == "waiting", 10, 0.1)
    publish(upstream, QUEUE, [b"late-1", b"late-2"])
    time.sleep(1.5)
    assert ready_count(upstream, QUEUE) == 2
    assert ready_count(downstream, QUEUE) == 0
    # Removing the policy stops the link and leaves the messages where they are.
    assert http(downstream, "DELETE", "/api/policies/%2F/federate")[0] == 204
    wait_for(lambda: links(downstream) == [], 10, 0.1)
    assert ready_count(upstream, QUEUE) == 2


def test_an_unreachable_upstream_shows_an_error(pair: tuple[NodeProcess, NodeProcess]) -> None:
    _, downstream = pair
    http(
        downstream,
        "PUT",
        "/api/parameters/federation-upstream/%2F/nowhere",
        {"value": {"uri": "amqp://guest:secret@127.0.0.1:1", "reconnect-delay": 1}},
    )
    http(
        downstream,
        "PUT",
        "/api/policies/%2F/lonely",
        {"pattern": "^lonely$", "definition": {"federation-upstream": "nowhere"}},
    )
    try:
        with pika.BlockingConnection(pika.URLParameters(downstream.url)) as conn:
            conn.channel().queue_declare("lonely")
            wait_for(lambda: [link["status"] for link in links(downstream)] == ["error"], 15, 0.1)
        [link] = links(downstream)
        assert link["error"] == "econnrefused"
        assert link["uri"] == "amqp://127.0.0.1:1"  # no credentials shown
        status, down = http(downstream, "GET", "/api/federation-links/state/down")
        assert status == 200 and [entry["queue"] for entry in down] == ["lonely"]
        listed = json.loads(
            ctl(downstream, "federation_status", "--only-down", "--formatter", "json")
        )
        assert [(entry["queue"], entry["status"]) for entry in listed] == [("lonely", "error")]
        assert "Restarting federation link" in ctl(
            downstream, "restart_federation_link", link["id"]
        )
    finally:
        http(downstream, "DELETE", "/api/policies/%2F/lonely")
        http(downstream, "DELETE", "/api/parameters/federation-upstream/%2F/nowhere")


@pytest.mark.parametrize("trusted", [False, True])
def test_user_id_crosses_only_a_trusted_upstream(
    pair: tuple[NodeProcess, NodeProcess], trusted: bool
) -> None:
    upstream, downstream = pair
    queue = f"signed.{trusted}".lower()
    with pika.BlockingConnection(pika.URLParameters(upstream.url)) as conn:
        channel = conn.channel()
        channel.queue_declare(queue, durable=True)
        channel.confirm_delivery()
        channel.basic_publish("", queue, b"signed", pika.BasicProperties(user_id="guest"))
    value = {"uri": upstream.url, "reconnect-delay": 1, "trust-user-id": trusted}
    path = f"/api/parameters/federation-upstream/%2F/{queue}"
    assert http(downstream, "PUT", path, {"value": value})[0] == 201
    policy = {"pattern": f"^{queue}$", "definition": {"federation-upstream": queue}}
    assert http(downstream, "PUT", f"/api/policies/%2F/{queue}", policy)[0] == 201
    try:
        with pika.BlockingConnection(pika.URLParameters(downstream.url)) as conn:
            channel = conn.channel()
            channel.queue_declare(queue, durable=True)
            received: list[Any] = []
            channel.basic_consume(
                queue, lambda ch, method, props, body: received.append(props), auto_ack=True
            )
            deadline = time.monotonic() + 15
            while not received and time.monotonic() < deadline:
                conn.process_data_events(time_limit=0.1)
        [properties] = received
        assert properties.user_id == ("guest" if trusted else None)
    finally:
        http(downstream, "DELETE", f"/api/policies/%2F/{queue}")
        http(downstream, "DELETE", path)


def test_upstreams_and_policies_travel_in_definitions(
    pair: tuple[NodeProcess, NodeProcess],
) -> None:
    upstream, downstream = pair
    value = {"uri": upstream.url, "prefetch-count": 7, "ack-mode": "on-publish"}
    http(downstream, "PUT", "/api/parameters/federation-upstream/%2F/exported", {"value": value})
    http(
        downstream,
        "PUT",
        "/api/parameters/federation-upstream-set/%2F/both",
        {"value": [{"upstream": "exported"}]},
    )
    policy = {"pattern": "^exported$", "definition": {"federation-upstream-set": "both"}}
    http(downstream, "PUT", "/api/policies/%2F/exported", policy)
    try:
        status, document = http(downstream, "GET", "/api/definitions")
        assert status == 200
        exported = {
            (entry["component"], entry["name"]): entry["value"] for entry in document["parameters"]
        }
        assert exported[("federation-upstream", "exported")] == value
        assert exported[("federation-upstream-set", "both")] == [{"upstream": "exported"}]
        fresh = NodeProcess(extra_args=["--node-name", "imported@localhost"]).start()
        try:
            assert http(fresh, "POST", "/api/definitions", document)[0] in (200, 201, 204)
            with pika.BlockingConnection(pika.URLParameters(fresh.url)) as conn:
                conn.channel().queue_declare("exported", durable=True)
            wait_for(lambda: [link["upstream"] for link in links(fresh)] == ["exported"], 15, 0.1)
            assert (
                http(fresh, "GET", "/api/parameters/federation-upstream/%2F/exported")[1]["value"]
                == value
            )
        finally:
            fresh.cleanup()
    finally:
        http(downstream, "DELETE", "/api/policies/%2F/exported")
        http(downstream, "DELETE", "/api/parameters/federation-upstream-set/%2F/both")
        http(downstream, "DELETE", "/api/parameters/federation-upstream/%2F/exported")
