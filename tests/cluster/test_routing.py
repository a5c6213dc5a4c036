"""Transparent routing on 3 real nodes: a queue homed on A, used by clients of B and C.

Every AMQP operation on a queue goes through the node the client is connected to; these tests
drive pika, aio-pika and kombu through each of them and read the home node's own counts from
its management API.
"""

from __future__ import annotations

import asyncio
import time
import urllib.error
import urllib.parse
from collections.abc import Iterator
from typing import Any

import aio_pika
import kombu
import pika
import pika.exceptions
import pytest

from tests.cluster.processes import Cluster, ClusterNode, queue_visible, running_cluster
from tests.support.node import wait_for

A, B, C = 0, 1, 2
PERSISTENT = pika.BasicProperties(delivery_mode=2)


@pytest.fixture(scope="module")
def three() -> Iterator[Cluster]:
    with running_cluster(3) as cluster:
        yield cluster


def url(cluster: Cluster, index: int) -> str:
    process = cluster.nodes[index].process
    assert process is not None
    return process.url


def connect(cluster: Cluster, index: int) -> pika.BlockingConnection:
    return pika.BlockingConnection(pika.URLParameters(url(cluster, index)))


def declare_on(cluster: Cluster, index: int, queue: str, **arguments: Any) -> None:
    with connect(cluster, index) as conn:
        channel = conn.channel()
        channel.queue_delete(queue)
        channel.queue_declare(queue, **arguments)
    for other in range(len(cluster.nodes)):
        if other != index:
            wait_for(lambda other=other: queue_visible(url(cluster, other), queue), 10, 0.02)


def home_counts(node: ClusterNode, queue: str) -> tuple[int, int, int]:
    """(ready, unacknowledged, consumers) as the home node counts them."""
    found = node.http("GET", f"/api/queues/%2F/{urllib.parse.quote(queue, safe='')}")
    return found["messages_ready"], found["messages_unacknowledged"], found["consumers"]


def wait_home_counts(node: ClusterNode, queue: str, expected: tuple[int, int, int]) -> None:
    wait_for(lambda: home_counts(node, queue) == expected, 10, 0.05)


def publish_confirmed(channel: Any, queue: str, bodies: list[bytes]) -> None:
    channel.confirm_delivery()
    for body in bodies:
        channel.basic_publish("", queue, body, PERSISTENT)


def test_published_on_b_in_order_and_consumed_on_c(three: Cluster) -> None:
    queue = "routing-order"
    declare_on(three, A, queue, durable=True)
    bodies = [str(number).encode() for number in range(500)]
    with connect(three, B) as publisher:
        publish_confirmed(publisher.channel(), queue, bodies)
    wait_home_counts(three.nodes[A], queue, (500, 0, 0))
    with connect(three, C) as consumer:
        channel = consumer.channel()
        assert channel.queue_declare(queue, passive=True).method.message_count == 500
        channel.basic_qos(prefetch_count=100)
        got = []
        for method, _properties, body in channel.consume(queue, inactivity_timeout=5):
            assert method is not None, f"stalled after {len(got)}"
            assert not method.redelivered
            got.append(body)
            channel.basic_ack(method.delivery_tag)
            if len(got) == len(bodies):
                break
        channel.cancel()
    assert got == bodies
    wait_home_counts(three.nodes[A], queue, (0, 0, 0))


def test_prefetch_holds_on_the_home_node_and_credit_flows_back(three: Cluster) -> None:
    queue = "routing-prefetch"
    declare_on(three, A, queue)
    with connect(three, B) as publisher:
        publish_confirmed(publisher.channel(), queue, [b"m%d" % n for n in range(50)])
    with connect(three, C) as consumer:
        channel = consumer.channel()
        channel.basic_qos(prefetch_count=5)
        seen: list[Any] = []
        channel.basic_consume(queue, lambda _c, method, _p, _b: seen.append(method))
        wait_for(lambda: consumer.process_data_events(0.05) or len(seen) == 5, 10, 0)
        consumer.process_data_events(0.3)
        assert len(seen) == 5
        wait_home_counts(three.nodes[A], queue, (45, 5, 1))
        channel.basic_ack(seen[-1].delivery_tag, multiple=True)
        wait_for(lambda: consumer.process_data_events(0.05) or len(seen) == 10, 10, 0)
        wait_home_counts(three.nodes[A], queue, (40, 5, 1))
        # Global prefetch on the channel holds as well.
        channel.basic_qos(prefetch_count=2, global_qos=True)
    wait_home_counts(three.nodes[A], queue, (45, 0, 0))


def test_channel_prefetch_shared_by_consumers_holds_on_the_clients_node(three: Cluster) -> None:
    # The home node holds each consumer to the channel's limit; two consumers share it, so the
    # client's node keeps back what would pass it, and hands it over as acks free room.
    queue = "routing-channel-prefetch"
    declare_on(three, A, queue)
    bodies = [b"m%02d" % n for n in range(20)]
    with connect(three, B) as publisher:
        publish_confirmed(publisher.channel(), queue, bodies)
    with connect(three, C) as consumer:
        channel = consumer.channel()
        channel.basic_qos(prefetch_count=3, global_qos=True)
        seen: list[tuple[str, Any, bytes]] = []
        for name in ("first", "second"):
            channel.basic_consume(
                queue, lambda _c, method, _p, body, name=name: seen.append((name, method, body))
            )
        wait_for(lambda: consumer.process_data_events(0.05) or len(seen) == 3, 10, 0)
        consumer.process_data_events(0.3)
        assert len(seen) == 3
        acked = 0
        while acked < len(bodies):
            channel.basic_ack(seen[acked][1].delivery_tag)
            acked += 1
            expected = min(acked + 3, len(bodies))
            wait_for(
                lambda expected=expected: (
                    consumer.process_data_events(0.02) or len(seen) >= expected
                ),
                10,
                0,
            )
            assert len(seen) == expected, f"{len(seen)} delivered, {acked} acked"
        assert sorted(body for _, _, body in seen) == bodies
        assert not any(method.redelivered for _, method, _ in seen)
        for name in ("first", "second"):
            theirs = [body for who, _, body in seen if who == name]
            assert theirs == sorted(theirs)  # each consumer's in the queue's order
        tags = [method.delivery_tag for _, method, _ in seen]
        assert tags == sorted(tags)
    wait_home_counts(three.nodes[A], queue, (0, 0, 0))


def test_nack_reject_and_recover_through_the_hop(three: Cluster) -> None:
    queue, dead = "routing-settle", "routing-settle-dead"
    declare_on(three, C, dead)
    declare_on(
        three,
        A,
        queue,
        arguments={"x-dead-letter-exchange": "", "x-dead-letter-routing-key": dead},
    )
    with connect(three, B) as conn:
        channel = conn.channel()
        publish_confirmed(channel, queue, [b"one", b"two"])
        method, _properties, body = channel.basic_get(queue)
        assert body == b"one" and not method.redelivered
        channel.basic_nack(method.delivery_tag, requeue=True)
        method, _properties, body = channel.basic_get(queue)
        assert body == b"one" and method.redelivered
        channel.basic_recover(requeue=True)
        again, _properties, body = channel.basic_get(queue)
        assert body == b"one" and again.redelivered
        channel.basic_reject(again.delivery_tag, requeue=False)
        # Dead-lettered from A to C, read through B.
        method = wait_for(lambda: channel.basic_get(dead, auto_ack=True)[0], 10, 0.05)
        assert method.routing_key == dead
        method, _properties, body = channel.basic_get(queue)
        assert body == b"two"
        channel.basic_ack(method.delivery_tag)
    wait_home_counts(three.nodes[A], queue, (0, 0, 0))


def test_cancel_priorities_exclusive_and_single_active_consumers(three: Cluster) -> None:
    queue = "routing-consumers"
    declare_on(three, A, queue)
    with connect(three, B) as on_b, connect(three, C) as on_c:
        low, high = on_b.channel(), on_c.channel()
        got_low: list[bytes] = []
        got_high: list[bytes] = []
        low.basic_consume(queue, lambda ch, m, _p, body: got_low.append(body), auto_ack=True)
        tag = high.basic_consume(
            queue,
            lambda ch, m, _p, body: got_high.append(body),
            auto_ack=True,
            arguments={"x-priority": 5},
        )
        wait_home_counts(three.nodes[A], queue, (0, 0, 2))
        with connect(three, A) as publisher:
            publish_confirmed(publisher.channel(), queue, [b"x"] * 20)
        wait_for(
            lambda: (
                on_b.process_data_events(0.02)
                or on_c.process_data_events(0.02)
                or len(got_high) == 20
            ),
            10,
            0,
        )
        assert got_low == []
        high.basic_cancel(tag)
        wait_home_counts(three.nodes[A], queue, (0, 0, 1))
        # An exclusive consumer through a third node is refused while others consume.
        with (
            connect(three, A) as on_a,
            pytest.raises(pika.exceptions.ChannelClosedByBroker) as refused,
        ):
            on_a.channel().basic_consume(queue, lambda *_: None, exclusive=True)
        assert refused.value.reply_code == 403
        assert "in exclusive use" in refused.value.reply_text

    single = "routing-single-active"
    declare_on(three, A, single, arguments={"x-single-active-consumer": True})
    with connect(three, B) as on_b, connect(three, C) as on_c:
        first: list[bytes] = []
        second: list[bytes] = []
        on_b.channel().basic_consume(single, lambda *a: first.append(a[3]), auto_ack=True)
        wait_home_counts(three.nodes[A], single, (0, 0, 1))
        on_c.channel().basic_consume(single, lambda *a: second.append(a[3]), auto_ack=True)
        wait_home_counts(three.nodes[A], single, (0, 0, 2))
        with connect(three, A) as publisher:
            publish_confirmed(publisher.channel(), single, [b"s"] * 10)
        wait_for(lambda: on_b.process_data_events(0.02) or len(first) == 10, 10, 0)
        on_c.process_data_events(0.2)
        assert second == []


def test_get_purge_delete_and_declare_counts_from_other_nodes(three: Cluster) -> None:
    queue = "routing-requests"
    declare_on(three, A, queue, durable=True)
    with connect(three, B) as conn:
        channel = conn.channel()
        publish_confirmed(channel, queue, [b"a", b"b", b"c"])
        method, _properties, body = channel.basic_get(queue, auto_ack=True)
        assert (body, method.message_count) == (b"a", 2)
        ok = channel.queue_declare(queue, durable=True).method
        assert (ok.message_count, ok.consumer_count) == (2, 0)
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as not_empty:
            channel.queue_delete(queue, if_empty=True)
        assert not_empty.value.reply_code == 406
        assert not_empty.value.reply_text == (
            f"PRECONDITION_FAILED - queue '{queue}' in vhost '/' not empty"
        )
        channel = conn.channel()
        assert channel.queue_purge(queue).method.message_count == 2
        with connect(three, C) as other:
            other.channel().basic_consume(queue, lambda *_: None)
            wait_home_counts(three.nodes[A], queue, (0, 0, 1))
            with pytest.raises(pika.exceptions.ChannelClosedByBroker) as in_use:
                channel.queue_delete(queue, if_unused=True)
            assert in_use.value.reply_code == 406
            assert in_use.value.reply_text == (
                f"PRECONDITION_FAILED - queue '{queue}' in vhost '/' in use"
            )
        channel = conn.channel()
        channel.basic_publish("", queue, b"last")
        wait_home_counts(three.nodes[A], queue, (1, 0, 0))
        assert channel.queue_delete(queue).method.message_count == 1
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as gone:
            conn.channel().queue_declare(queue, passive=True)
        assert gone.value.reply_code == 404


def test_exclusive_queues_stay_with_their_connection(three: Cluster) -> None:
    with connect(three, B) as owner:
        name = owner.channel().queue_declare("", exclusive=True).method.queue
        placed = three.nodes[A].http("GET", f"/api/queues/%2F/{name}")
        assert placed["node"] == three.nodes[B].name
        for index in (A, B, C):
            with connect(three, index) as other:
                for action in (
                    lambda ch: ch.basic_consume(name, lambda *_: None),
                    lambda ch: ch.basic_get(name),
                    lambda ch: ch.queue_declare(name, passive=True),
                ):
                    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as locked:
                        action(other.channel())
                    assert locked.value.reply_code == 405
    wait_for(lambda: name not in _queue_names(three.nodes[A]), 10, 0.1)


def _queue_names(node: ClusterNode) -> set[str]:
    return {queue["name"] for queue in node.http("GET", "/api/queues")}


def test_mandatory_alternate_exchange_cc_and_transactions(three: Cluster) -> None:
    on_a, on_c = "routing-ae-a", "routing-cc-c"
    declare_on(three, A, on_a)
    declare_on(three, C, on_c)
    with connect(three, B) as conn:
        channel = conn.channel()
        channel.exchange_declare("routing-ae", "fanout")
        channel.queue_bind(on_a, "routing-ae")
        channel.exchange_declare(
            "routing-main", "direct", arguments={"alternate-exchange": "routing-ae"}
        )
        channel.confirm_delivery()
        channel.basic_publish("routing-main", "nowhere", b"via-ae", mandatory=True)
        headers = pika.BasicProperties(headers={"CC": [on_c]})
        channel.basic_publish("", on_a, b"cc", headers, mandatory=True)
        with pytest.raises(pika.exceptions.UnroutableError):
            channel.basic_publish("amq.direct", "unbound", b"lost", mandatory=True)
        tx = conn.channel()
        tx.tx_select()
        tx.basic_publish("", on_c, b"rolled-back")
        tx.tx_rollback()
        tx.basic_publish("", on_c, b"committed")
        tx.tx_commit()
        bodies_a = [channel.basic_get(on_a, auto_ack=True)[2] for _ in range(2)]
        assert bodies_a == [b"via-ae", b"cc"]
        bodies_c = [channel.basic_get(on_c, auto_ack=True)[2] for _ in range(2)]
        assert bodies_c == [b"cc", b"committed"]
        assert channel.basic_get(on_c)[0] is None
        channel.exchange_delete("routing-main")
        channel.exchange_delete("routing-ae")


def test_aio_pika_publishes_and_consumes_across_nodes(three: Cluster) -> None:
    queue = "routing-aio-pika"
    declare_on(three, A, queue, durable=True)

    async def run() -> list[bytes]:
        publisher = await aio_pika.connect(url(three, B))
        consumer = await aio_pika.connect(url(three, C))
        async with publisher, consumer:
            out = await publisher.channel(publisher_confirms=True)
            for number in range(100):
                await out.default_exchange.publish(
                    aio_pika.Message(b"%d" % number, delivery_mode=2), routing_key=queue
                )
            inbound = await consumer.channel()
            await inbound.set_qos(prefetch_count=10)
            source = await inbound.declare_queue(queue, passive=True)
            got: list[bytes] = []
            async with source.iterator() as messages:
                async for message in messages:
                    async with message.process():
                        got.append(message.body)
                    if len(got) == 100:
                        break
            return got

    assert asyncio.run(asyncio.wait_for(run(), 30)) == [b"%d" % n for n in range(100)]


def test_kombu_puts_on_one_node_and_gets_on_another(three: Cluster) -> None:
    queue = "routing-kombu"
    declare_on(three, A, queue, durable=True)
    amqp_url = url(three, B).replace("amqp://", "pyamqp://")
    with kombu.Connection(amqp_url) as conn:
        simple = conn.SimpleQueue(queue)
        for number in range(10):
            simple.put({"n": number})
        simple.close()
    with kombu.Connection(url(three, C).replace("amqp://", "pyamqp://")) as conn:
        simple = conn.SimpleQueue(queue)
        got = []
        for _ in range(10):
            message = simple.get(timeout=10)
            got.append(message.payload["n"])
            message.ack()
        simple.close()
    assert got == list(range(10))


def test_management_on_any_node_reads_and_changes_remote_queues(three: Cluster) -> None:
    queue = "routing-mgmt"
    declare_on(three, A, queue)
    other = three.nodes[C]
    with connect(three, B) as conn:
        channel = conn.channel()
        publish_confirmed(channel, queue, [b"m1", b"m2", b"m3"])
        held = channel.basic_get(queue)[0]
        # Counts come from the home node at once, not from its next gossip report.
        shown = other.http("GET", f"/api/queues/%2F/{queue}")
        assert (shown["messages_ready"], shown["messages_unacknowledged"]) == (2, 1)
        # The home node counts the bytes a client of another node holds, too.
        assert (shown["message_bytes_ready"], shown["message_bytes_unacknowledged"]) == (4, 2)
        assert shown["node"] == three.nodes[A].name and shown["state"] == "running"
        listed = {q["name"]: q for q in other.http("GET", "/api/queues/%2F")}
        assert listed[queue]["messages"] == 3
        channel.basic_ack(held.delivery_tag)
    peeked = other.http(
        "POST",
        f"/api/queues/%2F/{queue}/get",
        {"count": 5, "ackmode": "ack_requeue_true", "encoding": "auto"},
    )
    assert [m["payload"] for m in peeked] == ["m2", "m3"]
    assert [m["message_count"] for m in peeked] == [1, 0]
    wait_home_counts(three.nodes[A], queue, (2, 0, 0))
    taken = other.http(
        "POST",
        f"/api/queues/%2F/{queue}/get",
        {"count": 1, "ackmode": "ack_requeue_false", "encoding": "auto"},
    )
    assert [m["payload"] for m in taken] == ["m2"] and taken[0]["redelivered"]
    # DELETE's conditions are decided by the home node's counts.
    with pytest.raises(urllib.error.HTTPError) as not_empty:
        other.http("DELETE", f"/api/queues/%2F/{queue}?if-empty=true")
    assert not_empty.value.code == 400
    assert queue in _queue_names(other)
    other.http("DELETE", f"/api/queues/%2F/{queue}/contents")
    wait_home_counts(three.nodes[A], queue, (0, 0, 0))


def _homes(node: ClusterNode) -> dict[str, str]:
    return {queue["name"]: queue["node"] for queue in node.http("GET", "/api/queues")}


def test_placement_client_local_balanced_and_by_policy(three: Cluster) -> None:
    names = [node.name for node in three.nodes]
    with connect(three, B) as conn:
        channel = conn.channel()
        channel.queue_declare("placed-local", arguments={"x-queue-leader-locator": "client-local"})
        homes = _homes(three.nodes[A])
        assert homes["placed-local"] == names[B]
        for number in range(3):
            # Each goes to the node with the fewest queues (the client's own node among equals).
            counts = {name: list(homes.values()).count(name) for name in names}
            fewest = min(counts.values())
            expected = {name for name, count in counts.items() if count == fewest}
            queue = f"placed-balanced-{number}"
            channel.queue_declare(queue, arguments={"x-queue-leader-locator": "balanced"})
            homes = _homes(three.nodes[A])
            assert homes[queue] in expected
            if names[B] in expected:
                assert homes[queue] == names[B]
        # Placed elsewhere, used from here: it is a queue like any other.
        publish_confirmed(channel, "placed-balanced-0", [b"here"])
        assert channel.basic_get("placed-balanced-0", auto_ack=True)[2] == b"here"
        exclusive = channel.queue_declare(
            "", exclusive=True, arguments={"x-queue-leader-locator": "balanced"}
        ).method.queue
        assert _homes(three.nodes[A])[exclusive] == names[B]

    three.nodes[A].http(
        "PUT",
        "/api/policies/%2F/spread",
        {"pattern": "^spread-", "definition": {"queue-leader-locator": "balanced"}},
    )
    try:
        with connect(three, C) as conn:
            channel = conn.channel()
            homes = _homes(three.nodes[A])
            counts = {name: list(homes.values()).count(name) for name in names}
            channel.queue_declare("spread-1")
            assert counts[_homes(three.nodes[A])["spread-1"]] == min(counts.values())
    finally:
        three.nodes[A].http("DELETE", "/api/policies/%2F/spread")

    with connect(three, B) as conn, pytest.raises(pika.exceptions.ChannelClosedByBroker) as invalid:
        conn.channel().queue_declare("placed-bad", arguments={"x-queue-leader-locator": "far"})
    assert invalid.value.reply_code == 406


def test_definitions_exported_from_any_node_list_every_queue(three: Cluster) -> None:
    declare_on(three, A, "exported-from-a", arguments={"x-max-length": 5})
    with connect(three, C) as conn:
        conn.channel().queue_declare("exported-from-c", durable=True)
        exclusive = conn.channel().queue_declare("", exclusive=True).method.queue
        wait_for(lambda: {"exported-from-c", exclusive} <= _queue_names(three.nodes[B]), 10)
        queues = {q["name"]: q for q in three.nodes[B].http("GET", "/api/definitions")["queues"]}
    assert queues["exported-from-a"]["arguments"] == {"x-max-length": 5}
    assert queues["exported-from-c"]["durable"] is True
    assert exclusive not in queues
    with connect(three, B) as conn:
        conn.channel().queue_delete("exported-from-a")
        conn.channel().queue_delete("exported-from-c")


def test_losing_the_home_node_cancels_remote_consumers_and_requeues_what_they_held() -> None:
    with running_cluster(3) as cluster:
        queue = "routing-home-lost"
        declare_on(cluster, A, queue, durable=True)
        with connect(cluster, B) as publisher:
            publish_confirmed(publisher.channel(), queue, [b"kept-%d" % n for n in range(10)])
        # A consumer on C holds every message unacknowledged; its node then dies.
        consumer = connect(cluster, C)
        channel = consumer.channel()
        held: list[Any] = []
        channel.basic_consume(queue, lambda _c, method, _p, _b: held.append(method))
        wait_for(lambda: consumer.process_data_events(0.05) or len(held) == 10, 10, 0)
        cluster.nodes[C].kill()
        wait_home_counts(cluster.nodes[A], queue, (10, 0, 0))
        with connect(cluster, B) as reader:
            method, _properties, body = reader.channel().basic_get(queue, auto_ack=True)
            assert body == b"kept-0" and method.redelivered

        # A consumer on B hears basic.cancel when the home node dies.
        cancelled: list[float] = []
        parameters = pika.URLParameters(url(cluster, B))
        parameters.client_properties = {"capabilities": {"consumer_cancel_notify": True}}
        watcher = pika.BlockingConnection(parameters)
        channel = watcher.channel()
        channel.add_on_cancel_callback(lambda _frame: cancelled.append(time.monotonic()))
        channel.basic_qos(prefetch_count=1)
        channel.basic_consume(queue, lambda *_: None)
        watcher.process_data_events(0.3)
        killed = time.monotonic()
        cluster.nodes[A].kill()
        wait_for(lambda: watcher.process_data_events(0.05) or cancelled, 10, 0)
        assert cancelled[0] - killed <= 5
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as down:
            watcher.channel().basic_get(queue)
        assert down.value.reply_code == 404
        watcher.close()

        # Back again, A serves its durable queue with what no one acknowledged.
        cluster.nodes[A].start(same_ports=True)

        def drained() -> list[bytes] | None:
            try:
                with connect(cluster, B) as reader:
                    channel = reader.channel()
                    bodies = []
                    while True:
                        method, _properties, body = channel.basic_get(queue, auto_ack=True)
                        if method is None:
                            return bodies
                        assert method.redelivered
                        bodies.append(body)
            except pika.exceptions.ChannelClosedByBroker:
                return None

        assert wait_for(drained, 20, 0.2) == [b"kept-%d" % n for n in range(1, 10)]


def test_a_name_declared_through_one_node_is_known_at_once_through_the_others(
    three: Cluster,
) -> None:
    """As in RabbitMQ, a declare-ok on one node means every node knows the name: a client of
    another node that acts on it right away gets no 404 (that node catches up on a miss)."""
    with connect(three, A) as declaring, connect(three, C) as using:
        on_a, on_c = declaring.channel(), using.channel()
        for number in range(40):
            queue, exchange = f"known-at-once-{number}", f"known-at-once-x-{number}"
            on_a.exchange_declare(exchange, "direct")
            on_a.queue_declare(queue)
            on_c.queue_declare(queue, passive=True)
            on_c.queue_bind(queue, exchange, "key")
            on_c.exchange_declare(exchange, passive=True)
        for number in range(40):
            on_a.queue_delete(f"known-at-once-{number}")
            on_a.exchange_delete(f"known-at-once-x-{number}")
    # A name nobody declared is still a 404, after the catch-up.
    with connect(three, C) as conn:
        channel = conn.channel()
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as closed:
            channel.queue_declare("known-nowhere", passive=True)
        assert closed.value.reply_code == 404
        assert closed.value.reply_text == "NOT_FOUND - no queue 'known-nowhere' in vhost '/'"
