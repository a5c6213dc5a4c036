"""The web UI against a 3-node cluster: the nodes page and the cluster map, a killed node turning
red, and the screenshots of each main page in docs/ui/ (shown in the README)."""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pika
import pika.exceptions
import pytest

from leveret.testing.process import LeveretProcess
from tests.cluster.processes import Cluster, queue_visible, running_cluster
from tests.support.node import REPO, wait_for
from tests.webui.ui import go, open_ui

# The README's screenshots are remade with LEVERET_SCREENSHOTS=1; other runs write theirs to a
# scratch directory, so that running the tests leaves the checkout as it was.
SCREENSHOTS = (
    REPO / "docs" / "ui"
    if os.environ.get("LEVERET_SCREENSHOTS") == "1"
    else Path(tempfile.gettempdir()) / "leveret-ui-screenshots"
)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with running_cluster(3) as formed:
        yield formed


@pytest.fixture(scope="module")
def upstream() -> Iterator[LeveretProcess]:
    """A node of its own that the cluster federates a queue from."""
    with LeveretProcess() as running:
        yield running


def mgmt_url(cluster: Cluster, index: int) -> str:
    process = cluster.nodes[index].process
    assert process is not None
    return process.management_url


def amqp_url(cluster: Cluster, index: int) -> str:
    process = cluster.nodes[index].process
    assert process is not None
    return process.url


def produce(url: str, stop: threading.Event) -> None:
    """Traffic for the charts: about 20 messages a second, for at most two minutes."""
    connection = pika.BlockingConnection(pika.URLParameters(url))
    channel = connection.channel()
    deadline = time.monotonic() + 120
    while not stop.is_set() and time.monotonic() < deadline:
        channel.basic_publish("", "invoices", b"invoice")
        connection.process_data_events(0.05)
    connection.close()


def shoot(page: Any, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def test_pages_of_a_cluster_and_a_killed_node_turning_red(
    cluster: Cluster, upstream: LeveretProcess, browser: Any
) -> None:
    first, second = cluster.nodes[0], cluster.nodes[1]
    # Queues homed on two nodes; a consumer on the third of a queue homed on the first.
    with pika.BlockingConnection(pika.URLParameters(amqp_url(cluster, 0))) as conn:
        channel = conn.channel()
        for name in ("orders", "invoices", "audit"):
            channel.queue_declare(name, durable=True)
            channel.basic_publish("", name, b"sample", pika.BasicProperties(delivery_mode=2))
    with pika.BlockingConnection(pika.URLParameters(amqp_url(cluster, 1))) as conn:
        conn.channel().queue_declare("shipping", durable=True)
    wait_for(lambda: queue_visible(amqp_url(cluster, 2), "orders"), 10, 0.05)
    remote_consumer = pika.BlockingConnection(pika.URLParameters(amqp_url(cluster, 2)))
    remote_consumer.channel().basic_consume("orders", lambda *_: None)
    local_client = pika.BlockingConnection(pika.URLParameters(amqp_url(cluster, 0)))
    local_client.channel().basic_consume("invoices", lambda *_: None, auto_ack=True)
    stop = threading.Event()
    producer = threading.Thread(target=produce, args=(amqp_url(cluster, 0), stop), daemon=True)
    producer.start()
    first.http(
        "PUT",
        "/api/parameters/federation-upstream/%2F/origin",
        {"value": {"uri": upstream.url}},
    )
    first.http(
        "PUT",
        "/api/policies/%2F/federate-fed",
        {
            "pattern": "^fed\\.",
            "definition": {"federation-upstream": "origin"},
            "apply-to": "queues",
        },
    )
    first.http(
        "PUT",
        "/api/policies/%2F/limits",
        {"pattern": "^orders$", "definition": {"max-length": 10000}},
    )
    with pika.BlockingConnection(pika.URLParameters(amqp_url(cluster, 0))) as conn:
        conn.channel().queue_declare("fed.events", durable=True)
    page = open_ui(browser, mgmt_url(cluster, 0))
    try:
        page.wait_for_selector("#totals .total")
        go(page, "#/map")
        page.wait_for_selector(f"#cluster-map [data-flow='{first.name}>{cluster.nodes[2].name}']")
        go(page, "#/federation")
        page.wait_for_selector("#links >> text=running")
        for route, name, ready in [
            ("#/overview", "overview", "[data-chart=rates] path[data-label=Published]"),
            ("#/queues", "queues", "tr[data-queue=orders]"),
            ("#/queue/%2F/orders", "queue", "#queue-total"),
            ("#/exchanges", "exchanges", "text=amq.topic"),
            ("#/connections", "connections", "button:has-text('Close')"),
            ("#/policies", "policies", "#policies >> text=limits"),
            ("#/federation", "federation", "#links >> text=running"),
            ("#/admin", "admin", "#users >> text=guest"),
            ("#/map", "map", "#cluster-map"),
            ("#/nodes", "nodes", f"[data-node='{second.name}'][data-state=up]"),
        ]:
            go(page, route)
            # A steady rate draws a flat line, which has no height: Playwright calls it hidden.
            page.wait_for_selector(ready, state="attached", timeout=30_000)
            shoot(page, name)
        assert page.locator(".node[data-state=up]").count() == 3
        # Each node's own Raft role and term (gossiped), not only the serving node's.
        term = first.status()["raft"]["term"]
        for node in cluster.nodes:
            card = f".node[data-node='{node.name}']"
            wait_for(lambda card=card: f", term {term}" in page.inner_text(card), 10, 0.2)
            assert re.search(r"Raft: (leader|follower), term", page.inner_text(card))
        cards = [page.inner_text(f".node[data-node='{n.name}']") for n in cluster.nodes]
        assert sum("Raft: leader," in card for card in cards) == 1
        lost = cluster.nodes[2]
        lost.kill()
        page.wait_for_selector(f".node[data-node='{lost.name}'][data-state=down]", timeout=60_000)
        assert page.locator(".node[data-state=up]").count() == 2
        shoot(page, "nodes-node-down")
        go(page, "#/map")
        page.wait_for_selector(f"#cluster-map [data-node='{lost.name}'][data-state=down]")
    finally:
        stop.set()
        producer.join(10)
        page.close()
        local_client.close()
        with contextlib.suppress(pika.exceptions.AMQPError):  # its node was killed
            remote_consumer.close()
