"""The management API of any node lists the whole cluster's connections, channels and
consumers, and closes a connection another node holds, as RabbitMQ's does."""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator
from typing import Any

import pika
import pika.exceptions
import pytest

from tests.cluster.processes import Cluster, running_cluster
from tests.cluster.test_routing import declare_on, url
from tests.support.node import wait_for

A, B, C = 0, 1, 2


@pytest.fixture(scope="module")
def three() -> Iterator[Cluster]:
    with running_cluster(3) as cluster:
        yield cluster


def _connect(cluster: Cluster, index: int, name: str) -> pika.BlockingConnection:
    parameters = pika.URLParameters(url(cluster, index))
    parameters.client_properties = {"connection_name": name}
    return pika.BlockingConnection(parameters)


def _by_given_name(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {item["user_provided_name"]: item for item in items if "user_provided_name" in item}


def test_any_node_lists_and_closes_the_clusters_clients(three: Cluster) -> None:
    names = [node.name for node in three.nodes]
    asking = three.nodes[A]
    declare_on(three, B, "clients-on-b")
    on_b = _connect(three, B, "worker-on-b")
    on_c = _connect(three, C, "worker-on-c")
    try:
        consuming = on_b.channel()
        consuming.basic_qos(prefetch_count=7)
        consuming.basic_consume("clients-on-b", lambda *_: None, consumer_tag="b-consumer")
        on_c.channel()
        listed = _by_given_name(asking.http("GET", "/api/connections"))
        assert {name: c["node"] for name, c in listed.items()} == {
            "worker-on-b": names[B],
            "worker-on-c": names[C],
        }
        in_vhost = _by_given_name(asking.http("GET", "/api/vhosts/%2F/connections"))
        assert set(in_vhost) == {"worker-on-b", "worker-on-c"}
        b_name = listed["worker-on-b"]["name"]
        quoted = urllib.parse.quote(b_name, safe="")  # (names hold " -> " and ports)
        shown = asking.http("GET", f"/api/connections/{quoted}")
        assert (shown["node"], shown["channels"]) == (names[B], 1)
        channels = asking.http("GET", f"/api/connections/{quoted}/channels")
        assert [(ch["prefetch_count"], ch["consumer_count"]) for ch in channels] == [(7, 1)]
        every_channel = asking.http("GET", "/api/channels")
        assert sorted(ch["node"] for ch in every_channel) == sorted([names[B], names[C]])
        channel_name = urllib.parse.quote(channels[0]["name"], safe="")
        channel = asking.http("GET", f"/api/channels/{channel_name}")
        assert [c["consumer_tag"] for c in channel["consumer_details"]] == ["b-consumer"]
        consumers = asking.http("GET", "/api/consumers")
        assert [(c["consumer_tag"], c["queue"]["name"]) for c in consumers] == [
            ("b-consumer", "clients-on-b")
        ]
        c_name = urllib.parse.quote(listed["worker-on-c"]["name"], safe="")
        asking.http("DELETE", f"/api/connections/{c_name}")
        with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as closed:
            wait_for(lambda: on_c.process_data_events(time_limit=0.1) and False, 10, 0)
        assert (closed.value.reply_code, closed.value.reply_text) == (
            320,
            "CONNECTION_FORCED - Closed via management plugin",
        )
        # The client hears connection.close before its node has its close-ok and drops it.
        wait_for(
            lambda: set(_by_given_name(asking.http("GET", "/api/connections"))) == {"worker-on-b"},
            10,
            0.05,
        )
    finally:
        for conn in (on_b, on_c):
            if conn.is_open:
                conn.close()


def test_a_consumer_through_another_node_is_listed_with_its_channel(three: Cluster) -> None:
    """The queue is homed on B and its consumer's client is on C: every node lists the
    consumer with the channel it has on C, as RabbitMQ's management API does."""
    declare_on(three, B, "channel-of-c")
    on_c = _connect(three, C, "consumer-on-c")
    try:
        channel = on_c.channel()
        channel.basic_consume("channel-of-c", lambda *_: None, consumer_tag="from-c")
        channels = _by_given_name(three.nodes[A].http("GET", "/api/connections"))
        connection = channels["consumer-on-c"]["name"]
        expected = {
            "connection_name": connection,
            "name": f"{connection} (1)",
            "node": three.nodes[C].name,
            "number": 1,
            "peer_host": "127.0.0.1",
            "peer_port": channels["consumer-on-c"]["peer_port"],
            "user": "guest",
        }
        for asking in three.nodes:
            consumers = asking.http("GET", "/api/consumers")
            assert [(c["consumer_tag"], c["channel_details"]) for c in consumers] == [
                ("from-c", expected)
            ], asking.name
            quoted = urllib.parse.quote(expected["name"], safe="")
            shown = asking.http("GET", f"/api/channels/{quoted}")
            assert [c["consumer_tag"] for c in shown["consumer_details"]] == ["from-c"]
    finally:
        on_c.close()


def test_the_overview_counts_the_whole_cluster(three: Cluster) -> None:
    """/api/overview on A counts C's client and the messages of a queue on B, and so does
    /api/vhosts (from the other nodes' gossip reports, a moment late)."""
    asking = three.nodes[A]
    declare_on(three, B, "totals-on-b")
    with _connect(three, C, "publisher-on-c") as on_c:
        channel = on_c.channel()
        channel.confirm_delivery()
        for body in (b"1", b"2", b"3"):
            channel.basic_publish("", "totals-on-b", body)
        every_queue = len(asking.http("GET", "/api/queues"))

        def totals() -> tuple[Any, ...]:
            overview = asking.http("GET", "/api/overview")
            objects, messages = overview["object_totals"], overview["queue_totals"]
            return (
                objects["connections"],
                objects["channels"],
                objects["queues"],
                messages.get("messages"),
                messages.get("messages_ready"),
            )

        wait_for(lambda: totals() == (1, 1, every_queue, 3, 3), 15, 0.2)
        vhost = asking.http("GET", "/api/vhosts/%2F")
        assert (vhost["messages"], vhost["messages_ready"]) == (3, 3)
