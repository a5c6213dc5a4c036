"""Queue features across nodes, the scenarios test_cluster_side_by_side.py runs on a 3-node
RabbitMQ cluster and a 3-node Leveret one.

Queues live on node A (some on C); clients use them through B and C: dead-lettering to a queue
on a third node, limits, exclusive queues, delete conditions, auto-delete, priorities,
alternate exchanges, CC/BCC, transactions, equivalence, direct reply-to, consumer priorities,
single active consumer, a global prefetch, gets left unacknowledged, zero TTL, unbinding and
expiry. RabbitMQ's transcripts are pinned as written.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pika
import pika.exceptions

from tests.interop.test_side_by_side import Transcript
from tests.interop.test_side_by_side_features import typed
from tests.interop.three_nodes import (
    PERSISTENT,
    ThreeNodes,
    attempt,
    connect,
    declare_on,
    declare_on_a,
)
from tests.support.node import wait_for

A, B, C = 0, 1, 2


def _message_count(url: str, queue: str) -> int:
    """The queue's count as a passive declare through `url` gives it."""
    with connect(url) as conn:
        count: int = conn.channel().queue_declare(queue, passive=True).method.message_count
        return count


def _gone(url: str, queue: str) -> bool:
    """Whether a passive declare through `url` answers 404. An exclusive queue that still lives
    answers 405 to other connections: that is not its end."""
    with connect(url) as conn:
        try:
            conn.channel().queue_declare(queue, passive=True)
        except pika.exceptions.ChannelClosedByBroker as closed:
            return closed.reply_code == 404
        return False


def _get_all(channel: Any, queue: str) -> list[Any]:
    got = []
    for _ in range(10):
        method, properties, body = channel.basic_get(queue, auto_ack=True)
        if method is None:
            break
        got.append((body, method.exchange, method.routing_key, typed(properties.headers)))
    return got


def dead_lettering_to_a_third_node(three: ThreeNodes) -> Transcript:
    """Rejected, nacked and expired on A, through B; dead-lettered to a queue homed on C."""
    seen: Transcript = []
    dead = {"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "sbs-dlq"}
    declare_on(three, C, "sbs-dlq")
    declare_on_a(three, "sbs-dl-src", arguments=dead)
    declare_on_a(three, "sbs-dl-ttl", arguments={**dead, "x-message-ttl": 50})
    with connect(three.url(B)) as conn:

        def kill(channel: Any) -> str:
            channel.confirm_delivery()
            channel.basic_publish(
                "", "sbs-dl-src", b"rejected", pika.BasicProperties(headers={"h": 1})
            )
            method, _, _ = channel.basic_get("sbs-dl-src")
            channel.basic_reject(method.delivery_tag, requeue=False)
            channel.basic_publish("", "sbs-dl-src", b"nacked")
            method, _, _ = channel.basic_get("sbs-dl-src")
            channel.basic_nack(method.delivery_tag, requeue=False)
            channel.basic_publish("", "sbs-dl-ttl", b"expired")
            return "ok"

        attempt(conn, seen, kill)
        wait_for(lambda: _message_count(three.url(B), "sbs-dlq") == 3, 10, 0.05)
        attempt(conn, seen, lambda c: sorted(_get_all(c, "sbs-dlq")))
    return seen


def limits_across_nodes(three: ThreeNodes) -> Transcript:
    """Max-length on A with reject-publish and drop-head, published to and read through B."""
    seen: Transcript = []
    declare_on_a(three, "sbs-rp", arguments={"x-max-length": 2, "x-overflow": "reject-publish"})
    declare_on_a(three, "sbs-dh", arguments={"x-max-length": 2})
    with connect(three.url(B)) as conn:

        def reject_publish(channel: Any) -> list[str]:
            channel.confirm_delivery()
            outcomes = []
            for body in (b"1", b"2", b"3"):
                try:
                    channel.basic_publish("", "sbs-rp", body)
                    outcomes.append("acked")
                except pika.exceptions.NackError:
                    outcomes.append("nacked")
            return outcomes

        def drop_head(channel: Any) -> list[Any]:
            channel.confirm_delivery()
            for body in (b"1", b"2", b"3"):
                channel.basic_publish("", "sbs-dh", body)
            got = []
            while (message := channel.basic_get("sbs-dh", auto_ack=True))[0] is not None:
                got.append((message[2], message[0].message_count))
            return got

        attempt(conn, seen, reject_publish)
        attempt(conn, seen, drop_head)
        attempt(conn, seen, lambda c: c.queue_declare("sbs-rp", passive=True).method.message_count)
    return seen


def exclusive_queue_of_another_connection(three: ThreeNodes) -> Transcript:
    """An exclusive queue declared through B, used by other connections through C and B."""
    seen: Transcript = []
    queue = "sbs-exclusive"
    owner = connect(three.url(B))
    owner.channel().queue_declare(queue, exclusive=True)
    with connect(three.url(C)) as other, connect(three.url(B)) as neighbour:
        attempt(other, seen, lambda c: c.queue_declare(queue, passive=True).method.queue)
        attempt(neighbour, seen, lambda c: c.queue_declare(queue, passive=True).method.queue)
        attempt(other, seen, lambda c: c.basic_get(queue) and "got")
        attempt(other, seen, lambda c: c.basic_consume(queue, lambda *_: None) and "consuming")
        attempt(other, seen, lambda c: c.queue_purge(queue) and "purged")
        attempt(other, seen, lambda c: c.queue_bind(queue, "amq.fanout") and "bound")
        attempt(other, seen, lambda c: c.queue_delete(queue) and "deleted")
        attempt(other, seen, lambda c: c.basic_publish("", queue, b"from C") or "published")
        owner.close()
        wait_for(lambda: _gone(three.url(C), queue), 10, 0.05)
        attempt(other, seen, lambda c: c.queue_declare(queue, passive=True).method.queue)
    return seen


def deleting_queues_used_through_other_nodes(three: ThreeNodes) -> Transcript:
    """if-unused and if-empty through C while B consumes; auto-delete when B's consumer goes;
    B's consumer told when C deletes its queue."""
    seen: Transcript = []
    declare_on_a(three, "sbs-used")
    declare_on_a(three, "sbs-full")
    declare_on_a(three, "sbs-auto", auto_delete=True)
    with connect(three.url(B)) as consumer, connect(three.url(C)) as other:
        channel = consumer.channel()
        cancelled: list[str] = []
        channel.add_on_cancel_callback(lambda frame: cancelled.append(frame.method.consumer_tag))
        channel.basic_consume("sbs-used", lambda *_: None)
        attempt(other, seen, lambda c: c.queue_delete("sbs-used", if_unused=True) and "deleted")
        attempt(
            other, seen, lambda c: c.queue_declare("sbs-used", passive=True).method.consumer_count
        )

        def fill(c: Any) -> str:
            c.confirm_delivery()
            c.basic_publish("", "sbs-full", b"m")
            return "confirmed"

        attempt(consumer, seen, fill)
        attempt(other, seen, lambda c: c.queue_delete("sbs-full", if_empty=True) and "deleted")
        attempt(other, seen, lambda c: c.queue_delete("sbs-full").method.message_count)
        tag = channel.basic_consume("sbs-auto", lambda *_: None)
        attempt(
            other, seen, lambda c: c.queue_declare("sbs-auto", passive=True).method.consumer_count
        )
        channel.basic_cancel(tag)
        wait_for(lambda: _gone(three.url(C), "sbs-auto"), 10, 0.05)
        attempt(other, seen, lambda c: c.queue_declare("sbs-auto", passive=True).method.queue)
        attempt(other, seen, lambda c: c.queue_delete("sbs-used").method.message_count)
        deadline = time.monotonic() + 5
        while not cancelled and time.monotonic() < deadline:
            consumer.process_data_events(time_limit=0.05)
        seen.append(("consumer cancelled", len(cancelled)))
    return seen


def priorities_and_redelivery(three: ThreeNodes) -> Transcript:
    """A priority queue on A fed through B and read through C; a nack and a recover requeue."""
    seen: Transcript = []
    queue = "sbs-priorities"
    declare_on_a(three, queue, arguments={"x-max-priority": 5})
    with connect(three.url(B)) as publisher, connect(three.url(C)) as reader:

        def publish(channel: Any) -> str:
            channel.confirm_delivery()
            for priority in (1, 5, 3, 0, 5):
                properties = pika.BasicProperties(priority=priority)
                channel.basic_publish("", queue, f"p{priority}".encode(), properties)
            return "confirmed"

        def read(channel: Any) -> list[Any]:
            method, _, _ = channel.basic_get(queue)
            channel.basic_nack(method.delivery_tag, requeue=True)
            got = []
            while (message := channel.basic_get(queue, auto_ack=True))[0] is not None:
                method, properties, body = message
                got.append((body, properties.priority, method.redelivered, method.message_count))
            return got

        def recover(channel: Any) -> list[Any]:
            channel.basic_publish("", queue, b"again")
            channel.basic_qos(prefetch_count=5)
            got: list[Any] = []
            channel.basic_consume(queue, lambda c, m, p, body: got.append((body, m.redelivered)))
            for wanted in (1, 2):
                deadline = time.monotonic() + 5
                while len(got) < wanted and time.monotonic() < deadline:
                    reader.process_data_events(time_limit=0.05)
                if wanted == 1:
                    channel.basic_recover(requeue=True)
            return got

        attempt(publisher, seen, publish)
        attempt(reader, seen, read)
        attempt(reader, seen, recover)
    return seen


def routing_to_three_homes(three: ThreeNodes) -> Transcript:
    """Through B: a fanout to queues on A, B and C; an alternate exchange; CC and BCC; a
    transaction rolled back and one committed. Read through C."""
    seen: Transcript = []
    queues = ("sbs-home-a", "sbs-home-b", "sbs-home-c")
    for index, queue in enumerate(queues):
        declare_on(three, index, queue)
    with connect(three.url(B)) as conn:

        def setup(channel: Any) -> str:
            channel.exchange_declare("sbs-fanout", "fanout")
            for queue in queues:
                channel.queue_bind(queue, "sbs-fanout")
            channel.exchange_declare("sbs-ae-target", "fanout")
            channel.queue_bind("sbs-home-a", "sbs-ae-target")
            arguments = {"alternate-exchange": "sbs-ae-target"}
            channel.exchange_declare("sbs-with-ae", "direct", arguments=arguments)
            return "ok"

        def publish(channel: Any) -> str:
            channel.confirm_delivery()
            channel.basic_publish("sbs-fanout", "", b"to all", PERSISTENT)
            channel.basic_publish("sbs-with-ae", "nowhere", b"via ae", mandatory=True)
            headers = {"CC": ["sbs-home-c"], "BCC": ["sbs-home-a"]}
            channel.basic_publish("", "sbs-home-b", b"cc", pika.BasicProperties(headers=headers))
            return "confirmed"

        def transactions(channel: Any) -> str:
            channel.tx_select()
            channel.basic_publish("sbs-fanout", "", b"rolled back")
            channel.tx_rollback()
            channel.basic_publish("sbs-fanout", "", b"committed")
            channel.tx_commit()
            return "committed"

        attempt(conn, seen, setup)
        attempt(conn, seen, publish)
        attempt(conn, seen, transactions)
    with connect(three.url(C)) as reader:
        attempt(reader, seen, lambda c: [(q, _get_all(c, q)) for q in queues])
        attempt(reader, seen, lambda c: c.exchange_delete("sbs-fanout") and "deleted")
    return seen


def equivalence_and_exclusive_consumers(three: ThreeNodes) -> Transcript:
    """A durable queue on A redeclared through B with other properties; an exclusive consumer
    through C, and other consumers through B."""
    seen: Transcript = []
    queue = "sbs-equivalence"
    arguments = {"x-max-length": 5}
    declare_on_a(three, queue, durable=True, arguments=arguments)
    with connect(three.url(B)) as conn, connect(three.url(C)) as holder:

        def redeclare(channel: Any, **properties: Any) -> Any:
            return channel.queue_declare(queue, **properties).method

        attempt(conn, seen, lambda c: redeclare(c, durable=True, arguments={"x-max-length": 6}))
        attempt(conn, seen, lambda c: redeclare(c, durable=False, arguments=arguments))
        attempt(conn, seen, lambda c: redeclare(c, durable=True, arguments=arguments).queue)
        holder.channel().basic_consume(queue, lambda *_: None, exclusive=True)
        attempt(conn, seen, lambda c: c.basic_consume(queue, lambda *_: None) and "consuming")
        attempt(
            conn, seen, lambda c: c.basic_consume(queue, lambda *_: None, exclusive=True) and "ok"
        )
        attempt(
            conn, seen, lambda c: redeclare(c, durable=True, arguments=arguments).consumer_count
        )
    return seen


def expiry_across_nodes(three: ThreeNodes) -> Transcript:
    """x-expires on A kept off by a consumer through B, then let run; message TTLs on A."""
    seen: Transcript = []
    declare_on_a(three, "sbs-expires", arguments={"x-expires": 500})
    declare_on_a(three, "sbs-ttl", arguments={"x-message-ttl": 300})
    with connect(three.url(B)) as conn:
        channel = conn.channel()
        tag = channel.basic_consume("sbs-expires", lambda *_: None)
        time.sleep(1.0)  # the scenario: twice x-expires with a consumer through B
        attempt(
            conn, seen, lambda c: c.queue_declare("sbs-expires", passive=True).method.consumer_count
        )
        channel.basic_cancel(tag)
        # Unused for four times x-expires (a passive declare would count as a use: no polling)
        time.sleep(2.0)
        attempt(conn, seen, lambda c: c.queue_declare("sbs-expires", passive=True).method.queue)

        def publish(c: Any) -> int:
            c.confirm_delivery()
            c.basic_publish("", "sbs-ttl", b"queue ttl")
            c.basic_publish("", "sbs-ttl", b"own ttl", pika.BasicProperties(expiration="100"))
            return c.queue_declare("sbs-ttl", passive=True).method.message_count

        attempt(conn, seen, publish)
        wait_for(lambda: _message_count(three.url(C), "sbs-ttl") == 0, 10, 0.05)
        attempt(conn, seen, lambda c: c.basic_get("sbs-ttl")[0])
    return seen


def direct_reply_to_across_nodes(three: ThreeNodes) -> Transcript:
    """A requester through B, a server through C taking requests from a queue on A: the reply
    comes back by direct reply-to. Then mandatory replies, through C and through B, to the
    address of a requester that has gone."""
    seen: Transcript = []
    declare_on_a(three, "sbs-rpc")
    with connect(three.url(B)) as requester, connect(three.url(C)) as server:
        replies: list[bytes] = []
        ask = requester.channel()
        ask.basic_consume(
            "amq.rabbitmq.reply-to", lambda c, m, p, body: replies.append(body), auto_ack=True
        )
        ask.confirm_delivery()  # once confirmed, the request is on A
        request = pika.BasicProperties(reply_to="amq.rabbitmq.reply-to", correlation_id="1")
        ask.basic_publish("", "sbs-rpc", b"ping", request)
        addresses: list[str] = []

        def serve(channel: Any) -> str:
            channel.confirm_delivery()
            _, properties, body = channel.basic_get("sbs-rpc", auto_ack=True)
            addresses.append(properties.reply_to)
            channel.basic_publish("", properties.reply_to, body.upper())
            return "replied"

        attempt(server, seen, serve)
        deadline = time.monotonic() + 5
        while not replies and time.monotonic() < deadline:
            requester.process_data_events(time_limit=0.05)
        seen.append(("replies", replies))
        ask.close()

        def reply_to_gone(channel: Any) -> str:
            channel.confirm_delivery()
            channel.basic_publish("", addresses[0], b"late", mandatory=True)
            return "confirmed"

        attempt(server, seen, reply_to_gone)
        attempt(requester, seen, reply_to_gone)
    return seen


def consumers_across_nodes(three: ThreeNodes) -> Transcript:
    """Consumers of queues on A through B and C: priorities, single active consumer (and its
    hand-over when the active one cancels), and purge with deliveries unacknowledged."""
    seen: Transcript = []
    declare_on_a(three, "sbs-prioritised")
    declare_on_a(three, "sbs-single", arguments={"x-single-active-consumer": True})
    with (
        connect(three.url(B)) as low,
        connect(three.url(C)) as high,
        connect(three.url(A)) as publisher,
    ):
        got: dict[str, list[bytes]] = {"low": [], "high": []}
        for conn, name, priority in ((low, "low", 1), (high, "high", 10)):
            channel = conn.channel()
            channel.basic_qos(prefetch_count=2)
            channel.basic_consume(
                "sbs-prioritised",
                lambda c, m, p, body, name=name: got[name].append(body),
                arguments={"x-priority": priority},
            )
        feed = publisher.channel()
        feed.confirm_delivery()
        for number in range(3):
            feed.basic_publish("", "sbs-prioritised", f"m{number}".encode())
        deadline = time.monotonic() + 5
        while len(got["low"]) + len(got["high"]) < 3 and time.monotonic() < deadline:
            low.process_data_events(time_limit=0.02)
            high.process_data_events(time_limit=0.02)
        # The higher priority consumer takes what its prefetch allows, the other the rest.
        seen.append(("by priority", got["high"], got["low"]))
        attempt(publisher, seen, lambda c: c.queue_purge("sbs-prioritised").method.message_count)
        attempt(
            publisher,
            seen,
            lambda c: c.queue_declare("sbs-prioritised", passive=True).method.message_count,
        )

        singles: list[tuple[str, bytes]] = []
        first = low.channel()
        first_tag = first.basic_consume(
            "sbs-single", lambda c, m, p, body: singles.append(("B", body)), auto_ack=True
        )
        second = high.channel()
        second.basic_consume(
            "sbs-single", lambda c, m, p, body: singles.append(("C", body)), auto_ack=True
        )
        feed.basic_publish("", "sbs-single", b"s1")

        def settle(count: int) -> None:
            deadline = time.monotonic() + 5
            while len(singles) < count and time.monotonic() < deadline:
                low.process_data_events(time_limit=0.02)
                high.process_data_events(time_limit=0.02)

        settle(1)
        first.basic_cancel(first_tag)
        feed.basic_publish("", "sbs-single", b"s2")
        settle(2)
        seen.append(("single active", singles))
    return seen


def qos_gets_and_closes_across_nodes(three: ThreeNodes) -> Transcript:
    """Through B: a global prefetch shared by consumers of queues on A and on C; a get left
    unacknowledged when its channel closes; a zero TTL queue with a consumer; an unbind."""
    seen: Transcript = []
    declare_on_a(three, "sbs-qos-a")
    declare_on(three, C, "sbs-qos-c")
    declare_on_a(three, "sbs-ttl-zero", arguments={"x-message-ttl": 0})
    with connect(three.url(A)) as feeder, connect(three.url(B)) as client:
        feed = feeder.channel()
        feed.confirm_delivery()
        for queue in ("sbs-qos-a", "sbs-qos-c"):
            for number in range(3):
                feed.basic_publish("", queue, f"{queue}-{number}".encode())
        channel = client.channel()
        channel.basic_qos(prefetch_count=2, global_qos=True)
        got: list[bytes] = []
        for queue in ("sbs-qos-a", "sbs-qos-c"):
            channel.basic_consume(queue, lambda c, m, p, body: got.append(body))
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            client.process_data_events(time_limit=0.05)
        seen.append(("global prefetch", len(got)))
        channel.close()

        def get_then_close(c: Any) -> Any:
            method, _, body = c.basic_get("sbs-qos-a")
            return body, method.redelivered

        getter = client.channel()
        seen.append(("got", get_then_close(getter)))
        getter.close()
        attempt(client, seen, get_then_close)

        zero: list[bytes] = []
        ttl_channel = client.channel()
        ttl_channel.basic_consume("sbs-ttl-zero", lambda c, m, p, body: zero.append(body), True)
        feed.basic_publish("", "sbs-ttl-zero", b"now or never")
        deadline = time.monotonic() + 2
        while not zero and time.monotonic() < deadline:
            client.process_data_events(time_limit=0.05)
        seen.append(("zero ttl", zero))

        def unbind(c: Any) -> Any:
            c.exchange_declare("sbs-direct", "direct")
            c.queue_bind("sbs-qos-c", "sbs-direct", "k")
            c.confirm_delivery()
            c.basic_publish("sbs-direct", "k", b"bound")
            c.queue_unbind("sbs-qos-c", "sbs-direct", "k")
            try:
                c.basic_publish("sbs-direct", "k", b"unbound", mandatory=True)
            except pika.exceptions.UnroutableError:
                return "returned after the unbind"
            return "routed after the unbind"

        attempt(client, seen, unbind)
        attempt(client, seen, lambda c: c.exchange_delete("sbs-direct") and "deleted")
    return seen


def _no_queue(name: str) -> tuple[str, int, str]:
    return ("channel-closed", 404, f"NOT_FOUND - no queue '{name}' in vhost '/'")


def _locked(name: str) -> tuple[str, int, str]:
    return (
        "channel-closed",
        405,
        f"RESOURCE_LOCKED - cannot obtain exclusive access to locked queue '{name}' in vhost "
        "'/'. It could be originally declared on another connection or the exclusive property "
        "value does not match that of the original declaration.",
    )


def _death(queue: str, reason: str) -> dict[str, Any]:
    return {
        "x-death": [
            {
                "count": ("long", 1),
                "exchange": ("str", ""),
                "queue": ("str", queue),
                "reason": ("str", reason),
                "routing-keys": [("str", queue)],
            }
        ],
        "x-first-death-exchange": ("str", ""),
        "x-first-death-queue": ("str", queue),
        "x-first-death-reason": ("str", reason),
    }


_CC = {"CC": [("str", "sbs-home-c")]}
EXPECTED: dict[Callable[[ThreeNodes], Transcript], Transcript] = {
    dead_lettering_to_a_third_node: [
        ("ok", "ok"),
        (
            "ok",
            [
                (b"expired", "", "sbs-dlq", _death("sbs-dl-ttl", "expired")),
                (b"nacked", "", "sbs-dlq", _death("sbs-dl-src", "rejected")),
                (b"rejected", "", "sbs-dlq", {"h": ("int", 1), **_death("sbs-dl-src", "rejected")}),
            ],
        ),
    ],
    limits_across_nodes: [
        ("ok", ["acked", "acked", "nacked"]),
        ("ok", [(b"2", 1), (b"3", 0)]),
        ("ok", 2),
    ],
    exclusive_queue_of_another_connection: [
        *[_locked("sbs-exclusive")] * 7,
        # Anyone may publish to an exclusive queue.
        ("ok", "published"),
        _no_queue("sbs-exclusive"),
    ],
    deleting_queues_used_through_other_nodes: [
        ("channel-closed", 406, "PRECONDITION_FAILED - queue 'sbs-used' in vhost '/' in use"),
        ("ok", 1),
        ("ok", "confirmed"),
        ("channel-closed", 406, "PRECONDITION_FAILED - queue 'sbs-full' in vhost '/' not empty"),
        ("ok", 1),
        ("ok", 1),
        _no_queue("sbs-auto"),
        ("ok", 0),
        ("consumer cancelled", 1),
    ],
    priorities_and_redelivery: [
        ("ok", "confirmed"),
        (
            "ok",
            [
                (b"p5", 5, True, 4),
                (b"p5", 5, False, 3),
                (b"p3", 3, False, 2),
                (b"p1", 1, False, 1),
                (b"p0", 0, False, 0),
            ],
        ),
        ("ok", [(b"again", False), (b"again", True)]),
    ],
    routing_to_three_homes: [
        ("ok", "ok"),
        ("ok", "confirmed"),
        ("ok", "committed"),
        (
            "ok",
            [
                (
                    "sbs-home-a",
                    [
                        (b"to all", "sbs-fanout", "", None),
                        (b"via ae", "sbs-with-ae", "nowhere", None),
                        (b"cc", "", "sbs-home-b", _CC),  # BCC is gone
                        (b"committed", "sbs-fanout", "", None),
                    ],
                ),
                (
                    "sbs-home-b",
                    [
                        (b"to all", "sbs-fanout", "", None),
                        (b"cc", "", "sbs-home-b", _CC),
                        (b"committed", "sbs-fanout", "", None),
                    ],
                ),
                (
                    "sbs-home-c",
                    [
                        (b"to all", "sbs-fanout", "", None),
                        (b"cc", "", "sbs-home-b", _CC),
                        (b"committed", "sbs-fanout", "", None),
                    ],
                ),
            ],
        ),
        ("ok", "deleted"),
    ],
    equivalence_and_exclusive_consumers: [
        (
            "channel-closed",
            406,
            "PRECONDITION_FAILED - inequivalent arg 'x-max-length' for queue 'sbs-equivalence' "
            "in vhost '/': received '6' but current is '5'",
        ),
        (
            "channel-closed",
            406,
            "PRECONDITION_FAILED - inequivalent arg 'durable' for queue 'sbs-equivalence' in "
            "vhost '/': received 'false' but current is 'true'",
        ),
        ("ok", "sbs-equivalence"),
        *[
            (
                "channel-closed",
                403,
                "ACCESS_REFUSED - queue 'sbs-equivalence' in vhost '/' in exclusive use",
            )
        ]
        * 2,
        ("ok", 1),
    ],
    direct_reply_to_across_nodes: [
        ("ok", "replied"),
        ("replies", [b"PING"]),
        # RabbitMQ asks the requester's node, and returns a mandatory reply whose requester
        # has gone, through another node as through the requester's own.
        ("returned", [312]),
        ("returned", [312]),
    ],
    consumers_across_nodes: [
        ("by priority", [b"m0", b"m1"], [b"m2"]),
        ("ok", 0),
        ("ok", 0),
        # Once B's active consumer has its cancel-ok, C's is the active one.
        ("single active", [("B", b"s1"), ("C", b"s2")]),
    ],
    qos_gets_and_closes_across_nodes: [
        ("global prefetch", 2),
        # A get left unacknowledged comes back redelivered when its channel closes.
        ("got", (b"sbs-qos-a-0", True)),
        ("ok", (b"sbs-qos-a-0", True)),
        ("zero ttl", [b"now or never"]),
        ("ok", "returned after the unbind"),
        ("ok", "deleted"),
    ],
    expiry_across_nodes: [
        ("ok", 1),
        _no_queue("sbs-expires"),
        ("ok", 2),
        ("ok", None),
    ],
}
