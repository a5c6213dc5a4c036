"""`/api/exchanges` and `/api/bindings`, checked by routing real messages."""

from __future__ import annotations

from urllib.parse import quote

import pika

from tests.mgmt.conftest import ManagedNode, amqp_connection


def test_exchanges_are_declared_listed_and_deleted(managed: ManagedNode) -> None:
    api = managed.api
    assert (
        api.request("PUT", "/api/exchanges/%2F/ex", {"type": "fanout", "durable": True}).status
        == 201
    )
    assert (
        api.request("PUT", "/api/exchanges/%2F/ex", {"type": "fanout", "durable": True}).status
        == 204
    )
    shown = api.get("/api/exchanges/%2F/ex")
    assert (
        shown["type"],
        shown["durable"],
        shown["internal"],
        shown["user_who_performed_action"],
    ) == ("fanout", True, False, "guest")
    names = [e["name"] for e in api.get("/api/exchanges/%2F")]
    assert {"", "amq.direct", "amq.fanout", "amq.topic", "amq.headers", "amq.match", "ex"} <= set(
        names
    )
    assert api.get("/api/exchanges/%2F/amq.default")["name"] == ""
    with amqp_connection(managed) as connection:
        connection.channel().exchange_declare("ex", "fanout", passive=True)
    assert api.request("DELETE", "/api/exchanges/%2F/ex").status == 204
    assert api.request("GET", "/api/exchanges/%2F/ex").status == 404


def test_published_messages_reach_queues_with_their_properties(managed: ManagedNode) -> None:
    api = managed.api
    with amqp_connection(managed) as connection:
        channel = connection.channel()
        channel.queue_declare("inbox")
        body = {
            "properties": {"delivery_mode": 2, "headers": {"k": "v"}, "content_type": "text/plain"},
            "routing_key": "inbox",
            "payload": "aGVsbG8=",
            "payload_encoding": "base64",
        }
        assert api.request("POST", "/api/exchanges/%2F/amq.default/publish", body).json() == {
            "routed": True
        }
        _method, properties, received = channel.basic_get("inbox", auto_ack=True)
        assert received == b"hello"
        assert (properties.delivery_mode, properties.headers, properties.content_type) == (
            2,
            {"k": "v"},
            "text/plain",
        )
        unroutable = dict(body, routing_key="nowhere")
        assert api.request("POST", "/api/exchanges/%2F/amq.default/publish", unroutable).json() == {
            "routed": False
        }
        wrong_user = dict(body, properties={"user_id": "someone"})
        assert (
            api.request("POST", "/api/exchanges/%2F/amq.default/publish", wrong_user).status == 400
        )


def test_bindings_made_over_http_route_messages(managed: ManagedNode) -> None:
    api = managed.api
    api.put("/api/exchanges/%2F/logs", {"type": "topic"})
    api.put("/api/queues/%2F/errors", {})
    created = api.request(
        "POST",
        "/api/bindings/%2F/e/logs/q/errors",
        {"routing_key": "*.error", "arguments": {"x": 1}},
    )
    assert created.status == 201
    location = created.headers["location"]
    assert location.startswith("errors/%2A.error~")
    key = location.split("/", 1)[1]
    shown = api.get(f"/api/bindings/%2F/e/logs/q/errors/{key}")
    assert (shown["routing_key"], shown["arguments"], shown["properties_key"]) == (
        "*.error",
        {"x": 1},
        key,
    )
    with amqp_connection(managed) as connection:
        channel = connection.channel()
        channel.basic_publish("logs", "db.error", b"boom")
        channel.basic_publish("logs", "db.info", b"fine")
        assert channel.queue_declare("errors", passive=True).method.message_count == 1
    listed = api.get("/api/queues/%2F/errors/bindings")
    assert [(b["source"], b["routing_key"]) for b in listed] == [
        ("", "errors"),
        ("logs", "*.error"),
    ]
    assert [b["destination"] for b in api.get("/api/exchanges/%2F/logs/bindings/source")] == [
        "errors"
    ]
    assert api.request("DELETE", f"/api/bindings/%2F/e/logs/q/errors/{key}").status == 204
    assert api.get("/api/bindings/%2F/e/logs/q/errors") == []
    assert api.request("DELETE", f"/api/bindings/%2F/e/logs/q/errors/{key}").status == 404


def test_exchange_to_exchange_bindings(managed: ManagedNode) -> None:
    api = managed.api
    api.put("/api/exchanges/%2F/upstream", {"type": "direct"})
    api.put("/api/exchanges/%2F/downstream", {"type": "fanout"})
    assert (
        api.request(
            "POST", "/api/bindings/%2F/e/upstream/e/downstream", {"routing_key": "k"}
        ).status
        == 201
    )
    (binding,) = api.get("/api/exchanges/%2F/downstream/bindings/destination")
    assert (binding["source"], binding["destination_type"], binding["properties_key"]) == (
        "upstream",
        "exchange",
        "k",
    )
    assert api.get("/api/bindings/%2F/e/upstream/e/downstream/k")["routing_key"] == "k"
    all_bindings = api.get("/api/bindings")
    assert any(b["destination"] == "downstream" for b in all_bindings)
    assert api.request("DELETE", "/api/bindings/%2F/e/upstream/e/downstream/k").status == 204


def test_empty_routing_keys_have_a_tilde_key(managed: ManagedNode) -> None:
    api = managed.api
    api.put("/api/queues/%2F/q", {})
    assert (
        api.request("POST", "/api/bindings/%2F/e/amq.fanout/q/q", {}).headers["location"] == "q/~"
    )
    assert api.get("/api/bindings/%2F/e/amq.fanout/q/q/~")["routing_key"] == ""
    with amqp_connection(managed) as connection:
        channel = connection.channel()
        channel.basic_publish("amq.fanout", "anything", b"x", pika.BasicProperties())
        assert channel.queue_declare("q", passive=True).method.message_count == 1
    assert api.request("DELETE", f"/api/bindings/%2F/e/amq.fanout/q/q/{quote('~')}").status == 204
