"""Federated queues across 3-node clusters: cluster to cluster, mutual, and a load-balanced
logical queue inside one cluster; links run once, on the queue's home node, seen from any node."""

from __future__ import annotations

import threading
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pika
import pytest

from tests.cluster.processes import Cluster, ClusterNode, queue_visible
from tests.support.node import wait_for

Clusters = tuple[Cluster, Cluster]


@pytest.fixture(scope="module")
def clusters() -> Iterator[Clusters]:
    upstream, downstream = Cluster(3, prefix="up"), Cluster(3, prefix="down")
    try:
        yield upstream.form(), downstream.form()
    except BaseException:
        print(upstream.logs(), downstream.logs())
        raise
    finally:
        upstream.cleanup()
        downstream.cleanup()


def url(node: ClusterNode) -> str:
    assert node.process is not None
    return node.process.url


def plain_uri(node: ClusterNode) -> str:
    """What links show for `node` (their URI without credentials)."""
    assert node.process is not None
    return f"amqp://127.0.0.1:{node.process.ports['amqp']}/"


def declare(node: ClusterNode, queue: str) -> None:
    with pika.BlockingConnection(pika.URLParameters(url(node))) as conn:
        conn.channel().queue_declare(queue, durable=True)


def publish(node: ClusterNode, queue: str, bodies: list[str]) -> None:
    with pika.BlockingConnection(pika.URLParameters(url(node))) as conn:
        channel = conn.channel()
        channel.confirm_delivery()
        for body in bodies:
            channel.basic_publish("", queue, body.encode(), pika.BasicProperties(delivery_mode=2))


def ready(node: ClusterNode, queue: str) -> int:
    with pika.BlockingConnection(pika.URLParameters(url(node))) as conn:
        return conn.channel().queue_declare(queue, passive=True).method.message_count


def links(node: ClusterNode, queue: str | None = None) -> list[dict[str, Any]]:
    found = node.http("GET", "/api/federation-links")
    return [link for link in found if queue is None or link["queue"] == queue]


def set_upstream(node: ClusterNode, name: str, value: dict[str, Any]) -> None:
    node.http("PUT", f"/api/parameters/federation-upstream/%2F/{name}", {"value": value})


def set_policy(node: ClusterNode, name: str, pattern: str, definition: dict[str, Any]) -> None:
    node.http(
        "PUT",
        f"/api/policies/%2F/{name}",
        {"pattern": pattern, "definition": definition, "apply-to": "queues"},
    )


def home_of(node: ClusterNode, queue: str) -> str:
    return str(node.http("GET", f"/api/queues/%2F/{queue}")["node"])


def consume(
    node: ClusterNode, queue: str, count: int, seconds: float = 30, prefetch: int = 10
) -> list[tuple[str, Any]]:
    """Up to `count` messages taken from `queue` through `node`, acknowledged one by one."""
    received: list[tuple[str, Any]] = []
    with pika.BlockingConnection(pika.URLParameters(url(node))) as conn:
        channel = conn.channel()
        channel.basic_qos(prefetch_count=prefetch)

        def take(ch: Any, method: Any, properties: Any, body: bytes) -> None:
            received.append((body.decode(), properties.headers))
            ch.basic_ack(method.delivery_tag)

        channel.basic_consume(queue, take)
        deadline = time.monotonic() + seconds
        while len(received) < count and time.monotonic() < deadline:
            conn.process_data_events(time_limit=0.1)
    return received


def metrics(node: ClusterNode) -> str:
    assert node.process is not None
    address = f"http://127.0.0.1:{node.process.ports['mgmt']}/metrics"
    with urllib.request.urlopen(address, timeout=10) as response:
        return str(response.read().decode())


def test_a_cluster_federated_from_another_cluster(clusters: Clusters) -> None:
    up, down = clusters
    queue = "orders"
    declare(up.nodes[1], queue)  # homed on up2
    publish(up.nodes[2], queue, [f"o{number}" for number in range(30)])
    set_upstream(
        down.nodes[0],
        "site-up",
        {"uri": [url(node) for node in up.nodes], "reconnect-delay": 1},
    )
    set_policy(down.nodes[0], "from-up", "^orders$", {"federation-upstream": "site-up"})
    declare(down.nodes[1], queue)  # homed on down2: the link runs there, once
    home = home_of(down.nodes[0], queue)
    assert home == down.nodes[1].name
    for node in down.nodes:  # every node lists the one link, from gossip or its own
        wait_for(
            lambda node=node: (
                [(link["node"], link["status"]) for link in links(node, queue)]
                == [(home, "running")]
            ),
            20,
            0.2,
        )
    [link] = links(down.nodes[2], queue)
    assert link["queue"] == link["upstream_queue"] == queue
    assert link["uri"] == plain_uri(up.nodes[0])  # the first URI answered
    assert 'rabbitmq_federation_links{status="running"} 1' in metrics(down.nodes[1])
    assert "rabbitmq_federation_links{" not in metrics(down.nodes[0])
    # A consumer on a third node of the downstream cluster pulls through the link.
    received = consume(down.nodes[2], queue, 30)
    assert sorted(body for body, _ in received) == sorted(f"o{number}" for number in range(30))
    assert received[0][1]["x-received-from"][0]["uri"] == plain_uri(up.nodes[0])
    assert ready(up.nodes[0], queue) == 0
    down.nodes[0].http("DELETE", "/api/policies/%2F/from-up")
    down.nodes[0].http("DELETE", "/api/parameters/federation-upstream/%2F/site-up")


def test_mutual_federation_messages_follow_consumers(clusters: Clusters) -> None:
    up, down = clusters
    queue = "shared"
    set_upstream(down.nodes[0], "peer", {"uri": url(up.nodes[0]), "reconnect-delay": 1})
    set_upstream(up.nodes[0], "peer", {"uri": url(down.nodes[0]), "reconnect-delay": 1})
    for cluster in clusters:
        set_policy(cluster.nodes[0], "mutual", "^shared$", {"federation-upstream": "peer"})
        declare(cluster.nodes[0], queue)
        wait_for(
            lambda cluster=cluster: (
                [link["status"] for link in links(cluster.nodes[0], queue)] == ["running"]
            ),
            20,
            0.2,
        )
    publish(up.nodes[0], queue, [f"u{number}" for number in range(10)])
    publish(down.nodes[0], queue, [f"d{number}" for number in range(10)])
    # Idle messages stay put: no consumer anywhere, nothing moves.
    time.sleep(2)
    assert (ready(up.nodes[0], queue), ready(down.nodes[0], queue)) == (10, 10)
    # A consumer on the downstream side takes its own messages, then the other side's.
    received = consume(down.nodes[1], queue, 20)
    assert sorted(body for body, _ in received) == sorted(
        [f"u{number}" for number in range(10)] + [f"d{number}" for number in range(10)]
    )
    # ...and the other way round: messages published downstream follow a consumer upstream.
    publish(down.nodes[2], queue, ["back-1", "back-2"])
    received = consume(up.nodes[2], queue, 2)
    assert sorted(body for body, _ in received) == ["back-1", "back-2"]
    hop = received[0][1]["x-received-from"][0]
    assert hop["uri"] == plain_uri(down.nodes[0]) and hop["visit-count"] == 1
    for cluster in clusters:
        cluster.nodes[0].http("DELETE", "/api/policies/%2F/mutual")
        cluster.nodes[0].http("DELETE", "/api/parameters/federation-upstream/%2F/peer")


def test_load_balanced_logical_queue_inside_one_cluster(clusters: Clusters) -> None:
    """The README's recipe: one queue per node (jobs.up1, jobs.up2, jobs.up3, each declared
    through its node), one upstream per queue, and a policy with the set `all`."""
    up, _ = clusters
    queues = [f"jobs.{node.name.split('@')[0]}" for node in up.nodes]
    every_node = [url(node) for node in up.nodes]
    for queue in queues:
        set_upstream(up.nodes[0], queue, {"uri": every_node, "queue": queue, "prefetch-count": 20})
    set_policy(up.nodes[0], "jobs", r"^jobs\.", {"federation-upstream-set": "all"})
    for node, queue in zip(up.nodes, queues, strict=True):
        declare(node, queue)
    for node, queue in zip(up.nodes, queues, strict=True):
        wait_for(lambda node=node, queue=queue: queue_visible(url(node), queue), 10, 0.1)
        assert home_of(up.nodes[0], queue) == node.name
    total = 300
    publish(up.nodes[0], queues[0], [f"j{number}" for number in range(total)])

    taken: dict[str, list[str]] = {node.name: [] for node in up.nodes}
    done = threading.Event()

    def worker(node: ClusterNode, queue: str) -> None:
        with pika.BlockingConnection(pika.URLParameters(url(node))) as conn:
            channel = conn.channel()
            channel.basic_qos(prefetch_count=5)

            def take(ch: Any, method: Any, properties: Any, body: bytes) -> None:
                time.sleep(0.005)  # each job takes a while: one worker cannot keep up alone
                taken[node.name].append(body.decode())
                ch.basic_ack(method.delivery_tag)

            channel.basic_consume(queue, take)
            deadline = time.monotonic() + 60
            while not done.is_set() and time.monotonic() < deadline:
                conn.process_data_events(time_limit=0.1)

    workers = [
        threading.Thread(target=worker, args=(node, queue), daemon=True)
        for node, queue in zip(up.nodes, queues, strict=True)
    ]
    for thread in workers:
        thread.start()
    # Each queue links to the two others; a queue's upstream naming itself runs no link.
    expected = {(q, other) for q in queues for other in queues if other != q}
    try:
        wait_for(lambda: sum(len(bodies) for bodies in taken.values()) >= total, 60, 0.2)
        wait_for(
            lambda: (
                {
                    (link["queue"], link["upstream_queue"])
                    for link in links(up.nodes[1])
                    if link["queue"].startswith("jobs.")
                }
                == expected
            ),
            20,
            0.2,
        )
    finally:
        done.set()
        for thread in workers:
            thread.join(10)
    everything = [body for bodies in taken.values() for body in bodies]
    assert sorted(everything) == sorted(f"j{number}" for number in range(total))
    assert all(taken[node.name] for node in up.nodes), {k: len(v) for k, v in taken.items()}
    up.nodes[0].http("DELETE", "/api/policies/%2F/jobs")


def test_restarts_and_leader_changes_never_leave_two_links(clusters: Clusters) -> None:
    up, down = clusters
    queue = "steady"
    declare(up.nodes[0], queue)
    set_upstream(down.nodes[0], "steady-up", {"uri": url(up.nodes[0]), "reconnect-delay": 1})
    set_policy(down.nodes[0], "steady", "^steady$", {"federation-upstream": "steady-up"})
    declare(down.nodes[2], queue)  # homed on down3
    home = down.nodes[2]
    names = sorted(node.name for node in down.nodes)

    def one_link_on_home() -> bool:
        return all(
            [(link["node"], link["status"]) for link in links(node, queue)]
            == [(home.name, "running")]
            for node in down.running()
        )

    wait_for(one_link_on_home, 20, 0.2)
    # The Raft leader goes (down3 itself if it leads): a new one is elected, still one link.
    leader = down.node(down.wait_leader(names))
    leader.kill()
    survivors = [node for node in down.nodes if node is not leader]
    down.wait_leader(names, survivors)
    leader.start(same_ports=True)
    down.wait_leader(names)
    wait_for(one_link_on_home, 30, 0.2)
    # The home node is SIGKILLed and comes back: its link comes back with it, once.
    home.kill()
    wait_for(lambda: all(links(node, queue) == [] for node in down.running()), 30, 0.2)
    home.start(same_ports=True)
    wait_for(one_link_on_home, 30, 0.2)
    publish(up.nodes[1], queue, ["after-restarts"])
    assert [body for body, _ in consume(down.nodes[0], queue, 1)] == ["after-restarts"]
    down.nodes[0].http("DELETE", "/api/policies/%2F/steady")
    down.nodes[0].http("DELETE", "/api/parameters/federation-upstream/%2F/steady-up")
