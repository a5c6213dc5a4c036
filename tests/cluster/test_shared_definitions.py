"""A clustered node's definitions live in the replicated store: real node processes, real clients.

Exchanges, queues and bindings declared over AMQP on one node exist on every node; two nodes
declaring one name at once get one queue; a node cut off from the majority refuses to change
definitions with RabbitMQ's metadata-timeout error and keeps serving its queues; durable
definitions and messages survive a restart of the whole cluster; the node others join brings
its definitions.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from typing import Any

import pika
import pytest
from pika.exceptions import ChannelClosedByBroker, ConnectionClosedByBroker

from leveret.amqp import methods as m
from leveret.amqp.frames import content_frames, method_frame
from leveret.amqp.properties import BasicProperties, encode_header_payload
from tests.cluster.processes import Cluster, ClusterNode, running_cluster
from tests.support.node import wait_for
from tests.support.raw_client import RawClient

THREE = ["n1@localhost", "n2@localhost", "n3@localhost"]


def connect(node: ClusterNode) -> pika.BlockingConnection:
    assert node.process is not None
    parameters = pika.ConnectionParameters(
        "127.0.0.1", node.process.ports["amqp"], blocked_connection_timeout=30
    )
    return pika.BlockingConnection(parameters)


def on_channel(node: ClusterNode, action: Callable[[Any], Any]) -> Any:
    connection = connect(node)
    try:
        return action(connection.channel())
    finally:
        if connection.is_open:
            connection.close()


def exists(node: ClusterNode, kind: str, name: str) -> bool:
    """Whether a passive declare of `name` succeeds on `node`."""
    connection = connect(node)
    try:
        channel = connection.channel()
        if kind == "queue":
            channel.queue_declare(name, passive=True)
        else:
            channel.exchange_declare(name, passive=True)
        return True
    except ChannelClosedByBroker as closed:
        assert closed.reply_code in (404, 405)
        return closed.reply_code == 405  # exists, exclusive to another connection
    finally:
        if connection.is_open:
            connection.close()


def test_declarations_on_one_node_exist_on_every_node() -> None:
    with running_cluster(3) as cluster:
        n1, n2, n3 = cluster.nodes

        def declare(channel: Any) -> None:
            channel.exchange_declare("orders", "topic", durable=True)
            channel.queue_declare("eu-orders", durable=True)
            channel.queue_bind("eu-orders", "orders", "eu.*")

        on_channel(n2, declare)
        # Read-your-writes on the declaring node: its model changed before declare-ok.
        assert exists(n2, "exchange", "orders") and exists(n2, "queue", "eu-orders")
        for node in (n1, n3):
            wait_for(lambda node=node: exists(node, "queue", "eu-orders"), 10, 0.1)
            assert exists(node, "exchange", "orders")
            bindings = node.http("GET", "/api/bindings/%2F/e/orders/q/eu-orders")
            assert [b["routing_key"] for b in bindings] == ["eu.*"]

        # The queue's home is the node that declared it: its messages are there.
        def publish_and_get(channel: Any) -> bytes:
            channel.confirm_delivery()
            channel.basic_publish("orders", "eu.paris", b"croissant")
            method, _, body = channel.basic_get("eu-orders", auto_ack=True)
            assert method is not None
            return bytes(body)

        assert on_channel(n2, publish_and_get) == b"croissant"
        records = n3.metadata("queues")
        [queue] = [r for r in records if r["name"] == "eu-orders"]
        assert queue["home_node"] == "n2@localhost" and queue["durable"] is True

        # A redeclaration that differs is refused on another node with RabbitMQ's text.
        def redeclare(channel: Any) -> None:
            channel.queue_declare("eu-orders", durable=False)

        with pytest.raises(ChannelClosedByBroker) as refused:
            on_channel(n1, redeclare)
        assert refused.value.reply_code == 406
        assert "inequivalent arg 'durable' for queue 'eu-orders'" in refused.value.reply_text

        # Deleting on another node removes it everywhere, bindings included.
        on_channel(n3, lambda channel: channel.queue_delete("eu-orders"))
        for node in cluster.nodes:
            wait_for(lambda node=node: not exists(node, "queue", "eu-orders"), 10, 0.1)
        assert n1.http("GET", "/api/exchanges/%2F/orders/bindings/source") == []

        # Unbinding the deleted queue (aio-pika's RPC.close does) is unbind-ok on every node.
        def unbind_deleted(channel: Any) -> str:
            return type(channel.queue_unbind("eu-orders", "orders", "eu.*").method).__name__

        for node in cluster.nodes:
            assert on_channel(node, unbind_deleted) == "UnbindOk"


def test_frames_sent_behind_a_declare_wait_for_it_in_order() -> None:
    """No-wait declares, a bind and a publish in one write: each sees what came before it."""
    with running_cluster(3) as cluster:
        follower = next(node for node in cluster.nodes if node.name != cluster.wait_leader(THREE))
        assert follower.process is not None
        client = RawClient(follower.process.ports["amqp"], timeout=15)
        try:
            client.handshake()
            body = b"behind the declares"
            header = encode_header_payload(60, len(body), BasicProperties().encode())
            client.send(
                method_frame(
                    1, m.ExchangeDeclare(exchange="pipelined", type="fanout", no_wait=True)
                )
                + method_frame(1, m.QueueDeclare(queue="pipelined-q", no_wait=True))
                + method_frame(
                    1, m.QueueBind(queue="pipelined-q", exchange="pipelined", no_wait=True)
                )
                + content_frames(
                    1, m.BasicPublish(exchange="pipelined").encode(), header, body, 131072
                )
                + method_frame(1, m.BasicGet(queue="pipelined-q", no_ack=True))
            )
            reply = client.read_method()
            assert reply is not None and isinstance(reply[1], m.BasicGetOk), reply
            client.read_frame()  # the content header
            _, _, received = client.read_frame() or (0, 0, b"")
            assert received == body
        finally:
            client.close()


def _declare_exclusive(
    connection: pika.BlockingConnection,
    start: threading.Barrier,
    name: str,
    outcomes: dict[str, object],
    node_name: str,
) -> None:
    """Declare `name` exclusive as soon as the other thread is ready too; record what happened."""
    channel = connection.channel()
    start.wait(10)
    try:
        channel.queue_declare(name, exclusive=True)
        outcomes[node_name] = "declared"
    except ChannelClosedByBroker as closed:
        outcomes[node_name] = closed.reply_code


def test_two_nodes_declaring_one_exclusive_queue_at_once_get_one_queue() -> None:
    with running_cluster(3) as cluster:
        n1, n2, _ = cluster.nodes
        for round_number in range(5):
            name = f"only-one-{round_number}"
            outcomes: dict[str, object] = {}
            connections = {node.name: connect(node) for node in (n1, n2)}
            start = threading.Barrier(2)

            threads = [
                threading.Thread(
                    target=_declare_exclusive,
                    args=(connections[node_name], start, name, outcomes, node_name),
                )
                for node_name in connections
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(30)
            try:
                assert sorted(map(str, outcomes.values())) == ["405", "declared"], outcomes
            finally:
                for connection in connections.values():
                    if connection.is_open:
                        connection.close()
            # The owner's connection closed: the name is free again everywhere.
            wait_for(
                lambda name=name: not any(r["name"] == name for r in n1.metadata("queues")), 10, 0.1
            )


def test_exclusive_queues_of_a_closed_connection_go_from_every_node() -> None:
    with running_cluster(3) as cluster:
        n1, n2, _ = cluster.nodes
        connection = connect(n1)
        connection.channel().queue_declare("mine", exclusive=True)
        # n1 answered once it applied the declare; n2 applies it a moment later.
        wait_for(lambda: exists(n2, "queue", "mine"), 10, 0.05)

        def locked(channel: Any) -> None:
            channel.queue_declare("mine", passive=True)

        with pytest.raises(ChannelClosedByBroker) as refused:
            on_channel(n2, locked)
        assert refused.value.reply_code == 405
        connection.close()
        wait_for(lambda: not exists(n2, "queue", "mine"), 10, 0.1)
        on_channel(n2, lambda channel: channel.queue_declare("mine", exclusive=True))


def test_a_node_cut_off_from_the_majority_refuses_declares_and_keeps_serving() -> None:
    with running_cluster(3) as cluster:
        n1, n2, n3 = cluster.nodes

        def prepare(channel: Any) -> None:
            channel.queue_declare("kept", durable=True)

        on_channel(n3, prepare)
        for node in (n1, n2):
            node.signal(signal.SIGSTOP)
        try:
            connection = connect(n3)
            channel = connection.channel()
            with pytest.raises(ConnectionClosedByBroker) as refused:
                channel.queue_declare("new-while-alone", durable=True)
            assert refused.value.reply_code == 541
            assert refused.value.reply_text == (
                "INTERNAL_ERROR - Could not declare queue 'new-while-alone' in vhost '/' on node "
                "'n3@localhost' because the metadata store operation timed out"
            )

            # Its own queue still works for its own clients.
            def publish_and_get(channel: Any) -> bytes:
                channel.basic_publish("", "kept", b"still here")
                method, _, body = channel.basic_get("kept", auto_ack=True)
                assert method is not None
                return bytes(body)

            assert on_channel(n3, publish_and_get) == b"still here"
        finally:
            for node in (n1, n2):
                node.signal(signal.SIGCONT)
        cluster.wait_leader(THREE)
        on_channel(n3, lambda channel: channel.queue_declare("new-after-healing", durable=True))
        wait_for(lambda: exists(n1, "queue", "new-after-healing"), 10, 0.1)


def test_durable_definitions_and_messages_survive_a_whole_cluster_restart() -> None:
    with running_cluster(3) as cluster:
        n1, n2, _ = cluster.nodes

        def declare_and_publish(channel: Any) -> None:
            channel.exchange_declare("events", "direct", durable=True)
            channel.queue_declare("audit", durable=True)
            channel.queue_declare("scratch", durable=False)
            channel.queue_bind("audit", "events", "audit")
            channel.confirm_delivery()
            for number in range(50):
                channel.basic_publish(
                    "events", "audit", b"event %d" % number, pika.BasicProperties(delivery_mode=2)
                )

        on_channel(n2, declare_and_publish)
        for node in cluster.nodes:
            assert node.terminate() == 0
        for node in cluster.nodes:
            node.start(same_ports=True)
        cluster.wait_leader(THREE)

        def count(channel: Any) -> int:
            return int(channel.queue_declare("audit", passive=True).method.message_count)

        assert on_channel(n2, count) == 50
        wait_for(lambda: exists(n1, "exchange", "events"), 10, 0.1)
        assert n1.http("GET", "/api/bindings/%2F/e/events/q/audit")[0]["routing_key"] == "audit"
        # A non-durable queue ends with the run of its home node, as in RabbitMQ.
        wait_for(lambda: not exists(n1, "queue", "scratch"), 15, 0.1)


def test_the_node_others_join_brings_its_definitions() -> None:
    cluster = Cluster(2)
    try:
        first = ClusterNode("n1@localhost", cluster.secret_file, []).start()
        cluster.nodes.append(first)

        def before_joining(channel: Any) -> None:
            channel.queue_declare("from-before", durable=True)
            channel.confirm_delivery()
            for number in range(10):
                channel.basic_publish(
                    "", "from-before", b"%d" % number, pika.BasicProperties(delivery_mode=2)
                )

        on_channel(first, before_joining)
        second = ClusterNode("n2@localhost", cluster.secret_file, [first.seed]).start()
        cluster.nodes.append(second)
        cluster.wait_leader(["n1@localhost", "n2@localhost"])
        assert exists(second, "queue", "from-before")
        assert any(r["name"] == "from-before" for r in second.metadata("queues"))

        def count(channel: Any) -> int:
            return int(channel.queue_declare("from-before", passive=True).method.message_count)

        assert on_channel(first, count) == 10
        # From now on the first node's declarations go through the cluster too.
        on_channel(first, lambda channel: channel.queue_declare("after-joining"))
        wait_for(lambda: exists(second, "queue", "after-joining"), 10, 0.1)
    except BaseException:
        print(cluster.logs())
        raise
    finally:
        cluster.cleanup()


def test_the_management_api_of_every_node_lists_every_queue_and_shares_policies() -> None:
    with running_cluster(3) as cluster:
        n1, n2, _ = cluster.nodes

        def fill(channel: Any) -> None:
            channel.queue_declare("limited", durable=True)
            channel.confirm_delivery()
            for number in range(5):
                channel.basic_publish("", "limited", b"%d" % number)

        on_channel(n2, fill)
        # A policy set through one node's API applies to a queue homed on another.
        result = n1.ctl(
            "set_policy", "cap", "^limited$", '{"max-length": 2}', "--apply-to", "queues"
        )
        assert result.code == 0, result.err

        def shown_on_n1() -> dict[str, Any] | None:
            queues = {q["name"]: q for q in n1.http("GET", "/api/queues")}
            queue = queues.get("limited")
            if queue is None or queue.get("policy") != "cap" or queue.get("messages") != 2:
                return None
            return dict(queue)

        queue = wait_for(shown_on_n1, 15, 0.2)
        assert queue["node"] == "n2@localhost" and queue["state"] == "running"
        assert n2.http("GET", "/api/queues/%2F/limited")["messages"] == 2
        n2.kill()
        wait_for(lambda: n1.http("GET", "/api/queues/%2F/limited")["state"] == "down", 30, 0.2)
