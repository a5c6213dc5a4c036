"""`/api/queues` through HTTP, with state made and checked by a real AMQP client."""

from __future__ import annotations

import pathlib
import time
from urllib.parse import quote

import pika
import pika.exceptions
import pytest

from tests.mgmt.conftest import ManagedNode, amqp_connection, sample_statistics, start_managed_node
from tests.support.node import wait_for


def publish(
    channel: pika.adapters.blocking_connection.BlockingChannel,
    queue: str,
    bodies: list[bytes],
    persistent: bool = False,
) -> None:
    properties = pika.BasicProperties(delivery_mode=2 if persistent else 1)
    for body in bodies:
        channel.basic_publish("", queue, body, properties)


def test_a_queue_shows_its_messages_bytes_and_consumers(managed: ManagedNode) -> None:
    with amqp_connection(managed) as connection:
        channel = connection.channel()
        channel.queue_declare("q", durable=True, arguments={"x-max-length": 100})
        publish(channel, "q", [b"12345", b"1234567890"], persistent=True)
        publish(channel, "q", [b"abc"])
        consumer = connection.channel()
        consumer.basic_qos(prefetch_count=1)
        consumer.basic_consume("q", lambda *args: None, consumer_tag="tag-1")
        wait_for(lambda: managed.api.get("/api/queues/%2F/q")["messages_unacknowledged"] == 1)
        queue = managed.api.get("/api/queues/%2F/q")
    assert queue["messages"] == 3
    assert (queue["messages_ready"], queue["messages_unacknowledged"]) == (2, 1)
    assert queue["message_bytes"] == 18
    assert queue["message_bytes_unacknowledged"] == 5  # the first message went to the consumer
    assert queue["message_bytes_ready"] == 13
    assert (queue["messages_persistent"], queue["message_bytes_persistent"]) == (2, 15)
    assert queue["arguments"] == {"x-max-length": 100}
    assert (queue["durable"], queue["exclusive"], queue["type"], queue["state"]) == (
        True,
        False,
        "classic",
        "running",
    )
    assert queue["consumers"] == 1
    (details,) = queue["consumer_details"]
    assert (details["consumer_tag"], details["prefetch_count"], details["ack_required"]) == (
        "tag-1",
        1,
        True,
    )
    assert details["queue"] == {"name": "q", "vhost": "/"}
    assert queue["message_stats"]["publish"] == 3
    assert queue["message_stats"]["deliver_get"] == 1


def test_persistent_figures_are_exact_past_the_window_and_across_a_restart(
    tmp_path: pathlib.Path,
) -> None:
    # The queue counts them as messages come and go: no reading walks its messages, and those
    # paged out to disk (past the 2,048 held in memory) count exactly, not by extrapolation.
    def persistent(number: int) -> bool:
        return number % 3 == 0 or number >= 3000  # unlike the head, the tail is all persistent

    def persistent_figures(node: ManagedNode) -> tuple[int, int]:
        queue = node.api.get("/api/queues/%2F/mixed")
        return queue["messages_persistent"], queue["message_bytes_persistent"]

    node = start_managed_node(data_dir=str(tmp_path))
    try:
        with amqp_connection(node) as connection:
            channel = connection.channel()
            channel.confirm_delivery()
            channel.queue_declare("mixed", durable=True, arguments={"x-max-length": 4000})
            for number in range(4500):  # the first 500 go from the head: drop-head
                body = b"p%09d" % number if persistent(number) else b"t%d" % (number % 10)
                publish(channel, "mixed", [body], persistent=persistent(number))
            for _ in range(100):
                channel.basic_get("mixed", auto_ack=True)
            held = [channel.basic_get("mixed")[0] for _ in range(50)]
            channel.basic_nack(held[-1].delivery_tag, multiple=True, requeue=True)
            # The 100 taken were messages 500-599; the 50 requeued are counted again.
            kept = [n for n in range(600, 4500) if persistent(n)]
            wait_for(lambda: persistent_figures(node) == (len(kept), 10 * len(kept)))
    finally:
        node.stop()

    # Only persistent messages outlive a restart, all of them.
    node = start_managed_node(data_dir=str(tmp_path))
    try:
        assert node.api.get("/api/queues/%2F/mixed")["messages"] == len(kept)
        assert persistent_figures(node) == (len(kept), 10 * len(kept))
    finally:
        node.stop()


def test_unacknowledged_figures_follow_deliveries_acks_and_requeues(managed: ManagedNode) -> None:
    # The queue counts what it delivered and has not seen settled, to consumers and to
    # basic.get alike, so that no reading walks the channels (a consumer without a prefetch
    # limit may hold a million).
    def figures() -> tuple[int, int, int, int]:
        queue = managed.api.get("/api/queues/%2F/held")
        return (
            queue["messages_unacknowledged"],
            queue["message_bytes_unacknowledged"],
            queue["messages_persistent"],
            queue["message_bytes_persistent"],
        )

    with amqp_connection(managed) as connection:
        channel = connection.channel()
        channel.queue_declare("held", durable=True)
        for number in range(30):  # every third persistent, of 10 bytes; the others 3
            persistent = number % 3 == 0
            body = b"p%09d" % number if persistent else b"t%02d" % number
            publish(channel, "held", [body], persistent=persistent)
        delivered: list[int] = []
        channel.basic_consume("held", lambda _c, m, _p, _b: delivered.append(m.delivery_tag))
        wait_for(lambda: connection.process_data_events(0.05) or len(delivered) == 30)
        wait_for(lambda: figures() == (30, 10 * 10 + 20 * 3, 10, 100))

        channel.basic_ack(delivered[9], multiple=True)  # the first ten: 4 persistent
        channel.basic_nack(delivered[19], multiple=True, requeue=True)  # ten back, redelivered
        channel.basic_cancel(channel.consumer_tags[0])
        wait_for(lambda: figures()[:2] == (10, 3 * 10 + 7 * 3))
        assert figures()[2:] == (6, 60)  # the requeued ones count as ready again
        assert managed.api.get("/api/queues/%2F/held")["messages_ready"] == 10

        got = channel.basic_get("held")[0]
        assert got is not None
        wait_for(lambda: figures()[0] == 11)
        channel.basic_reject(got.delivery_tag, requeue=False)
        wait_for(lambda: figures()[0] == 10)


def test_message_rates_come_from_samples(managed: ManagedNode) -> None:
    with amqp_connection(managed) as connection:
        channel = connection.channel()
        channel.queue_declare("rated")
        sample_statistics(managed)
        publish(channel, "rated", [b"x"] * 20)
        channel.queue_declare("rated", passive=True)  # a round trip: the publishes have arrived
        sample_statistics(managed)
    queue = managed.api.get("/api/queues/%2F/rated")
    assert queue["message_stats"]["publish_details"]["rate"] > 0
    assert queue["messages_details"]["rate"] > 0
    overview = managed.api.get("/api/overview")
    assert overview["queue_totals"]["messages"] == 20
    assert overview["message_stats"]["publish_details"]["rate"] > 0


def test_put_declares_and_redeclares_a_queue(managed: ManagedNode) -> None:
    api = managed.api
    created = api.request(
        "PUT", "/api/queues/%2F/made", {"durable": True, "arguments": {"x-max-length": 7}}
    )
    assert created.status == 201
    again = api.request(
        "PUT", "/api/queues/%2F/made", {"durable": True, "arguments": {"x-max-length": 7}}
    )
    assert again.status == 204
    queue = api.get("/api/queues/%2F/made")
    assert (queue["durable"], queue["arguments"]) == (True, {"x-max-length": 7})
    with amqp_connection(managed) as connection:
        declared = connection.channel().queue_declare("made", passive=True)
        assert declared.method.message_count == 0


def test_queue_names_are_limited_to_255_bytes(managed: ManagedNode) -> None:
    api = managed.api
    assert api.request("PUT", f"/api/queues/%2F/{'a' * 255}", {}).status == 201
    refused = api.request("PUT", f"/api/queues/%2F/{'a' * 256}", {})
    assert refused.status == 400
    assert refused.json() == {
        "error": "bad_request",
        "reason": "queue should be less than 255 bytes, actually was 256\n",
    }
    multibyte = quote("é" * 128)  # 256 bytes in UTF-8
    assert api.request("PUT", f"/api/queues/%2F/{multibyte}", {}).status == 400


def test_delete_honours_if_empty_and_if_unused(managed: ManagedNode) -> None:
    api = managed.api
    with amqp_connection(managed) as connection:
        channel = connection.channel()
        channel.queue_declare("full")
        publish(channel, "full", [b"x"])
        channel.queue_declare("used")
        channel.basic_consume("used", lambda *args: None)
        assert api.request("DELETE", "/api/queues/%2F/full?if-empty=true").status == 400
        assert api.request("DELETE", "/api/queues/%2F/used?if-unused=true").status == 400
        assert api.request("DELETE", "/api/queues/%2F/full?if-unused=true").status == 204
        assert api.request("DELETE", "/api/queues/%2F/full").status == 404
    with amqp_connection(managed) as connection:
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as closed:
            connection.channel().queue_declare("full", passive=True)
        assert closed.value.reply_code == 404


def test_purge_removes_ready_messages(managed: ManagedNode) -> None:
    with amqp_connection(managed) as connection:
        channel = connection.channel()
        channel.queue_declare("p")
        publish(channel, "p", [b"1", b"2", b"3"])
        channel.queue_declare("p", passive=True)
        assert managed.api.request("DELETE", "/api/queues/%2F/p/contents").status == 204
        assert channel.queue_declare("p", passive=True).method.message_count == 0


def test_get_fetches_and_requeues_or_removes_per_ackmode(managed: ManagedNode) -> None:
    api = managed.api
    with amqp_connection(managed) as connection:
        channel = connection.channel()
        channel.queue_declare("g")
        channel.basic_publish(
            "", "g", b"first", pika.BasicProperties(content_type="text/plain", headers={"h": 1})
        )
        channel.basic_publish("", "g", b"\xff\xfe")
        channel.queue_declare("g", passive=True)
    path = "/api/queues/%2F/g/get"
    peeked = api.request(
        "POST", path, {"count": 5, "ackmode": "ack_requeue_true", "encoding": "auto"}
    ).json()
    assert [m["payload"] for m in peeked] == ["first", "//4="]
    assert [m["payload_encoding"] for m in peeked] == ["string", "base64"]
    assert [m["message_count"] for m in peeked] == [1, 0]
    assert peeked[0]["properties"] == {"content_type": "text/plain", "headers": {"h": 1}}
    assert (peeked[0]["exchange"], peeked[0]["routing_key"], peeked[0]["redelivered"]) == (
        "",
        "g",
        False,
    )
    again = api.request(
        "POST",
        path,
        {"count": 1, "ackmode": "ack_requeue_true", "encoding": "base64", "truncate": 2},
    ).json()
    assert (again[0]["payload"], again[0]["payload_bytes"], again[0]["redelivered"]) == (
        "Zmk=",
        5,
        True,
    )
    taken = api.request(
        "POST", path, {"count": 1, "ackmode": "ack_requeue_false", "encoding": "auto"}
    ).json()
    assert taken[0]["payload"] == "first"
    queue = api.get("/api/queues/%2F/g")
    assert (queue["messages"], queue["messages_unacknowledged"]) == (1, 0)
    assert (
        api.request("POST", path, {"count": 1, "ackmode": "nope", "encoding": "auto"}).status == 400
    )


def test_policies_show_on_the_queues_they_apply_to(managed: ManagedNode) -> None:
    api = managed.api
    api.put("/api/queues/%2F/limited", {})
    api.put(
        "/api/policies/%2F/cap",
        {"pattern": "^limited$", "definition": {"max-length": 50}, "apply-to": "queues"},
    )
    api.put("/api/operator-policies/%2F/guard", {"pattern": ".*", "definition": {"max-length": 10}})
    queue = api.get("/api/queues/%2F/limited")
    assert (queue["policy"], queue["operator_policy"]) == ("cap", "guard")
    assert queue["effective_policy_definition"] == {"max-length": 10}
    api.request("DELETE", "/api/operator-policies/%2F/guard")
    assert api.get("/api/queues/%2F/limited")["effective_policy_definition"] == {"max-length": 50}


def test_lists_take_columns_sorting_and_pages(managed: ManagedNode) -> None:
    api = managed.api
    for name in ("b", "a", "c"):
        api.put(f"/api/queues/%2F/{name}", {})
    api.put("/api/vhosts/other", {})
    api.put("/api/queues/other/z", {})
    assert api.get("/api/queues?columns=name,vhost") == [
        {"name": "a", "vhost": "/"},
        {"name": "b", "vhost": "/"},
        {"name": "c", "vhost": "/"},
        {"name": "z", "vhost": "other"},
    ]
    assert [q["name"] for q in api.get("/api/queues/%2F?sort=name&sort_reverse=true")] == [
        "c",
        "b",
        "a",
    ]
    page = api.get("/api/queues?page=2&page_size=3&columns=name")
    assert (page["items"], page["page_count"], page["total_count"]) == ([{"name": "z"}], 2, 4)
    plain = api.get("/api/queues/other?disable_stats=true&enable_queue_totals=true")
    assert plain[0]["messages"] == 0 and "message_bytes" not in plain[0]


def test_exclusive_queues_show_as_exclusive(managed: ManagedNode) -> None:
    with amqp_connection(managed) as connection:
        name = connection.channel().queue_declare("", exclusive=True).method.queue
        queue = managed.api.get(f"/api/queues/%2F/{quote(name, safe='')}")
        assert queue["exclusive"] is True
        assert name not in [q["name"] for q in managed.api.get("/api/definitions")["queues"]]


def test_the_collector_samples_on_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("leveret.mgmt.state.SAMPLE_INTERVAL_SECONDS", 0.05)
    managed = start_managed_node()
    try:
        with amqp_connection(managed) as connection:
            channel = connection.channel()
            channel.queue_declare("busy")
            deadline = time.monotonic() + 5
            rate = 0.0
            # Steady traffic, so that whichever interval was sampled last saw some.
            for _ in range(5000):
                publish(channel, "busy", [b"x"] * 5)
                channel.queue_declare("busy", passive=True)
                stats = managed.api.get("/api/queues/%2F/busy").get("message_stats", {})
                rate = stats.get("publish_details", {}).get("rate", 0.0)
                if rate > 0 or time.monotonic() > deadline:
                    break
            assert rate > 0
    finally:
        managed.stop()
