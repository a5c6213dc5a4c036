"""`/api/connections`, `/api/channels`, `/api/consumers`, and closing connections over HTTP."""

from __future__ import annotations

from urllib.parse import quote

import pika.exceptions
import pytest

from tests.mgmt.conftest import ManagedNode, amqp_connection
from tests.mgmt.scenario import wait_until


def test_connections_channels_and_consumers_are_listed(managed: ManagedNode) -> None:
    api = managed.api
    with amqp_connection(
        managed, client_properties={"connection_name": "orders-service"}
    ) as connection:
        publisher = connection.channel()
        publisher.confirm_delivery()
        consumer = connection.channel()
        consumer.basic_qos(prefetch_count=7)
        consumer.queue_declare("work")
        consumer.basic_consume("work", lambda *args: None, consumer_tag="worker-1", exclusive=True)
        (conn,) = api.get("/api/connections")
        local_port = conn["peer_port"]
        assert conn["name"] == f"127.0.0.1:{local_port} -> 127.0.0.1:{managed.amqp_port}"
        assert (conn["user"], conn["vhost"], conn["channels"], conn["protocol"]) == (
            "guest",
            "/",
            2,
            "AMQP 0-9-1",
        )
        assert conn["user_provided_name"] == "orders-service"
        assert conn["client_properties"]["product"] == "Pika Python Client Library"
        assert (
            api.get(f"/api/connections/{quote(conn['name'], safe='')}")["peer_port"] == local_port
        )
        channels = api.get("/api/channels")
        assert sorted(c["number"] for c in channels) == [1, 2]
        confirming = next(c for c in channels if c["number"] == 1)
        consuming = next(c for c in channels if c["number"] == 2)
        assert confirming["confirm"] is True
        assert (consuming["prefetch_count"], consuming["consumer_count"]) == (7, 1)
        assert consuming["name"] == f"{conn['name']} (2)"
        assert (
            api.get(f"/api/connections/{quote(conn['name'], safe='')}/channels")[0][
                "connection_details"
            ]["name"]
            == conn["name"]
        )
        shown = api.get(f"/api/channels/{quote(consuming['name'], safe='')}")
        assert [c["consumer_tag"] for c in shown["consumer_details"]] == ["worker-1"]
        (listed,) = api.get("/api/consumers/%2F")
        assert (listed["consumer_tag"], listed["exclusive"], listed["prefetch_count"]) == (
            "worker-1",
            True,
            7,
        )
        assert listed["queue"] == {"name": "work", "vhost": "/"}
        assert api.get("/api/queues/%2F/work")["exclusive_consumer_tag"] == "worker-1"
    wait_until(lambda: api.get("/api/connections") == [], 5, "the connection is gone from the list")


def test_deleting_a_connection_closes_it_with_320(managed: ManagedNode) -> None:
    api = managed.api
    with amqp_connection(managed) as connection:
        channel = connection.channel()
        (conn,) = api.get("/api/connections")
        closed = api.request(
            "DELETE",
            f"/api/connections/{quote(conn['name'], safe='')}",
            headers={"X-Reason": "maintenance window"},
        )
        assert closed.status == 204
        with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as refused:
            channel.queue_declare("x")
        assert refused.value.reply_code == 320
        assert refused.value.reply_text == "CONNECTION_FORCED - maintenance window"
    assert api.request("DELETE", "/api/connections/nope").status == 404


def test_default_reason_for_a_closed_connection(managed: ManagedNode) -> None:
    with amqp_connection(managed) as connection:
        channel = connection.channel()
        (conn,) = managed.api.get("/api/connections")
        managed.api.request("DELETE", f"/api/connections/{quote(conn['name'], safe='')}")
        with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as refused:
            channel.queue_declare("x")
        assert refused.value.reply_text == "CONNECTION_FORCED - Closed via management plugin"


def test_management_users_see_only_their_own_connections(managed: ManagedNode) -> None:
    api = managed.api
    api.put("/api/users/alice", {"password": "pw", "tags": "management"})
    api.put("/api/users/mo", {"password": "pw", "tags": "monitoring"})
    api.put("/api/permissions/%2F/alice", {"configure": ".*", "write": ".*", "read": ".*"})
    with amqp_connection(managed), amqp_connection(managed, "alice", "pw") as mine:
        mine.channel()
        own = api.get("/api/connections", user=("alice", "pw"))
        assert [c["user"] for c in own] == ["alice"]
        assert [c["user"] for c in api.get("/api/channels", user=("alice", "pw"))] == ["alice"]
        assert sorted(c["user"] for c in api.get("/api/connections", user=("mo", "pw"))) == [
            "alice",
            "guest",
        ]
        guests = next(c for c in api.get("/api/connections") if c["user"] == "guest")
        refused = api.request(
            "GET", f"/api/connections/{quote(guests['name'], safe='')}", user=("alice", "pw")
        )
        assert refused.status == 401
