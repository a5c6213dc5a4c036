"""The web UI served by one node of a 3-node cluster showing queues homed on another: a queue's
rates chart (its home node's counters and samples) and the cluster map's flows between two other
nodes."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pika
import pytest

from tests.cluster.processes import Cluster, ClusterNode, queue_visible, running_cluster
from tests.support.node import wait_for
from tests.webui.ui import go, open_ui


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with running_cluster(3) as formed:
        yield formed


def amqp_url(node: ClusterNode) -> str:
    assert node.process is not None
    return node.process.url


def mgmt_url(node: ClusterNode) -> str:
    assert node.process is not None
    return node.process.management_url


def declare_on(node: ClusterNode, queue: str, others: list[ClusterNode]) -> None:
    """`queue` homed on `node` (placement is client-local), known to `others` once declared."""
    with pika.BlockingConnection(pika.URLParameters(amqp_url(node))) as connection:
        connection.channel().queue_declare(queue)
    for other in others:
        wait_for(lambda other=other: queue_visible(amqp_url(other), queue), 10, 0.05)


def produce(url: str, queue: str, stop: threading.Event) -> None:
    """About 50 messages a second for at most a minute."""
    connection = pika.BlockingConnection(pika.URLParameters(url))
    channel = connection.channel()
    deadline = time.monotonic() + 60
    while not stop.is_set() and time.monotonic() < deadline:
        channel.basic_publish("", queue, b"x")
        connection.process_data_events(0.02)
    connection.close()


def test_a_queue_homed_elsewhere_has_its_rates_chart(cluster: Cluster, browser: Any) -> None:
    home, serving, third = cluster.nodes
    declare_on(home, "far-rates", [serving, third])
    stop = threading.Event()
    # The producer is on the third node: the messages reach the queue over the data plane.
    producer = threading.Thread(
        target=produce, args=(amqp_url(third), "far-rates", stop), daemon=True
    )
    producer.start()
    page = open_ui(browser, mgmt_url(serving))
    try:
        go(page, "#/queue/%2F/far-rates")
        published = "[data-chart=rates] path[data-label=Published]"
        # Samples are taken every 5 s on the home node: two of them draw a line.
        # A steady rate draws a flat line, which has no height: Playwright calls it hidden.
        page.wait_for_selector(published, state="attached", timeout=30_000)
        first = page.get_attribute(published, "d")
        wait_for(lambda: page.get_attribute(published, "d") != first, timeout=20, interval=0.5)
        assert "Published: 0/s" not in page.inner_text("[data-chart=rates] .legend")
        assert home.name in page.inner_text("#view")
        shown = serving.http("GET", "/api/queues/%2F/far-rates?msg_rates_age=60&msg_rates_incr=5")
        assert shown["node"] == home.name
        assert shown["message_stats"]["publish"] > 0
        assert shown["message_stats"]["publish_details"]["samples"]
        assert shown["messages_details"]["rate"] >= 0
        listed = {q["name"]: q for q in serving.http("GET", "/api/queues/%2F")}
        assert listed["far-rates"]["message_stats"]["publish"] > 0
        assert "consumer_details" not in listed["far-rates"]
        # A page sorted by name: chosen first, then its remote queues asked of their home node.
        paged = serving.http(
            "GET", "/api/queues/%2F?page=1&page_size=10&name=far-&columns=name,node,message_stats"
        )
        (item,) = [q for q in paged["items"] if q["name"] == "far-rates"]
        assert item["node"] == home.name and item["message_stats"]["publish"] > 0
        assert not page.problems
    finally:
        stop.set()
        producer.join(10)
        page.close()


def test_the_map_shows_flows_between_two_other_nodes(cluster: Cluster, browser: Any) -> None:
    home, serving, consuming = cluster.nodes[2], cluster.nodes[1], cluster.nodes[0]
    declare_on(home, "far-work", [serving, consuming])
    consumer = pika.BlockingConnection(pika.URLParameters(amqp_url(consuming)))
    page = open_ui(browser, mgmt_url(serving))
    try:
        consumer.channel().basic_consume("far-work", lambda *_: None)
        go(page, "#/map")
        # Neither end is the serving node: the home node's gossip tells of the consumer.
        flow = f"#cluster-map [data-flow='{home.name}>{consuming.name}']"
        page.wait_for_selector(flow, timeout=30_000)
        flows = serving.http("GET", f"/api/nodes/{home.name}")["cluster"]["consumer_flows"]
        assert flows.get(consuming.name) == 1
        consumer.close()
        page.wait_for_selector(flow, state="detached", timeout=30_000)
        assert not page.problems
    finally:
        page.close()
        if consumer.is_open:
            consumer.close()
