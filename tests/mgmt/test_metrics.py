"""`/metrics` in Prometheus format with rabbitmq_prometheus's names, labels and types."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pika
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.mgmt.conftest import ManagedNode, amqp_connection
from tests.mgmt.rabbitmq_capture import FIXTURE, metric_families
from tests.support.node import wait_for

GRAFANA = Path(__file__).parent / "fixtures" / "grafana-rabbitmq-overview-10991.json"


def scrape(managed: ManagedNode, path: str = "/metrics") -> str:
    answer = managed.api.request("GET", path, user=None)  # Prometheus scrapes without credentials
    assert answer.status == 200
    assert answer.headers["content-type"].startswith("text/plain; version=0.0.4")
    return answer.body.decode("utf-8")


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


@pytest.fixture
def busy(managed: ManagedNode) -> Any:
    with amqp_connection(managed) as connection:
        channel = connection.channel()
        channel.queue_declare("m1")
        channel.queue_declare("m2")
        for _ in range(3):
            channel.basic_publish("", "m1", b"12345", pika.BasicProperties(delivery_mode=2))
        channel.basic_publish("", "m2", b"x")
        consumer = connection.channel()
        consumer.basic_qos(prefetch_count=1)
        consumer.basic_consume("m1", lambda *args: None)
        wait_for(lambda: managed.api.get("/api/queues/%2F/m1")["messages_unacknowledged"] == 1)
        yield managed


def test_metrics_parse_and_carry_identity(busy: ManagedNode) -> None:
    values = samples(scrape(busy))
    identity = [labels for (name, labels) in values if name == "rabbitmq_identity_info"]
    (labels,) = identity
    shown = dict(labels)
    assert shown["rabbitmq_node"] == "leveret@localhost"
    assert shown["rabbitmq_cluster"] == "leveret"
    assert shown["rabbitmq_cluster_permanent_id"].startswith("leveret-cluster-id-")


def test_aggregated_metrics_sum_over_queues_and_channels(busy: ManagedNode) -> None:
    values = samples(scrape(busy))
    assert values[("rabbitmq_queue_messages_ready", ())] == 3  # two in m1, one in m2
    assert values[("rabbitmq_queue_messages_unacked", ())] == 1
    assert values[("rabbitmq_queue_messages", ())] == 4
    assert values[("rabbitmq_queue_messages_bytes", ())] == 16
    assert values[("rabbitmq_queue_messages_persistent", ())] == 3
    assert values[("rabbitmq_queues", ())] == 2
    assert values[("rabbitmq_connections", ())] == 1
    assert values[("rabbitmq_channels", ())] == 2
    assert values[("rabbitmq_consumers", ())] == 1
    assert values[("rabbitmq_channel_consumers", ())] == 1
    assert values[("rabbitmq_consumer_prefetch", ())] == 1
    assert values[("rabbitmq_queue_messages_published_total", ())] == 4
    amqp_classic = (("protocol", "amqp091"), ("queue_type", "rabbit_classic_queue"))
    assert values[("rabbitmq_global_messages_delivered_total", amqp_classic)] == 1
    assert values[("rabbitmq_global_consumers", (("protocol", "amqp091"),))] == 1
    assert values[("rabbitmq_connections_opened_total", ())] >= 1


def test_per_object_metrics_are_labelled_by_queue_and_channel(busy: ManagedNode) -> None:
    values = samples(scrape(busy, "/metrics/per-object"))
    assert values[("rabbitmq_queue_messages_ready", (("queue", "m1"), ("vhost", "/")))] == 2
    assert values[("rabbitmq_queue_messages_ready", (("queue", "m2"), ("vhost", "/")))] == 1
    consumers = {
        labels: v for (name, labels), v in values.items() if name == "rabbitmq_channel_consumers"
    }
    assert sorted(consumers.values()) == [0, 1]
    assert all(dict(labels)["channel"].endswith((" (1)", " (2)")) for labels in consumers)


def test_every_family_is_one_rabbitmq_exports_with_the_same_type_and_labels(
    busy: ManagedNode,
) -> None:
    golden = json.loads(FIXTURE.read_text())["metrics"]
    for path in ("/metrics", "/metrics/per-object"):
        ours = metric_families(scrape(busy, path))
        theirs = golden[path]
        unknown = sorted(set(ours) - set(theirs))
        assert not unknown, f"{path}: RabbitMQ has no {unknown}"
        different = {n: (ours[n], theirs[n]) for n in ours if ours[n] != theirs[n]}
        assert not different, f"{path}: {different}"


def test_the_rabbitmq_overview_dashboard_finds_every_metric_it_queries(busy: ManagedNode) -> None:
    dashboard = json.loads(GRAFANA.read_text())
    text = scrape(busy)
    exported = {
        sample.name for family in text_string_to_metric_families(text) for sample in family.samples
    }
    missing = [name for name in dashboard["metrics"] if name not in exported]
    assert not missing, f"the dashboard queries {missing}, which /metrics lacks"
    identity = next(
        f for f in text_string_to_metric_families(text) if f.name == "rabbitmq_identity_info"
    )
    assert set(dashboard["identity_labels"]) <= set(identity.samples[0].labels)
