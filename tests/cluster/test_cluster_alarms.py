"""Resource alarms are cluster-wide, as RabbitMQ's are: a node short of memory blocks the
publishers of every node until it recovers."""

from __future__ import annotations

import json
import urllib.error
from collections.abc import Iterator
from pathlib import Path

import pika
import pytest

from tests.cluster.processes import Cluster, running_cluster
from tests.cluster.test_routing import url
from tests.support.node import wait_for

A, C = 0, 2


@pytest.fixture
def three() -> Iterator[Cluster]:
    with running_cluster(3) as cluster:
        yield cluster


def test_a_memory_alarm_on_one_node_blocks_publishers_on_the_others(
    three: Cluster, tmp_path: Path
) -> None:
    config = tmp_path / "alarmed.toml"
    config.write_text('memory_high_watermark = "1MiB"\n')  # below any node's use
    seen: list[str] = []
    parameters = pika.URLParameters(url(three, A))
    with pika.BlockingConnection(parameters) as conn:
        conn.add_on_connection_blocked_callback(
            lambda _conn, frame: seen.append(f"blocked: {frame.method.reason}")
        )
        conn.add_on_connection_unblocked_callback(lambda _conn, _frame: seen.append("unblocked"))
        channel = conn.channel()
        channel.queue_declare("alarm-probe")
        node = three.nodes[C]
        node.kill()
        node.start(same_ports=True, extra=("--config", str(config)))

        def told(what: list[str]) -> bool:
            if not seen:
                # A connection hears it is blocked once it publishes, as on RabbitMQ.
                channel.basic_publish("", "alarm-probe", b"held")
            conn.process_data_events(time_limit=0.1)
            return seen == what

        wait_for(lambda: told(["blocked: low on memory"]), 20, 0)
        # A's health check of the cluster's alarms fails, naming C; A's own is fine.
        asking = three.nodes[A]
        with pytest.raises(urllib.error.HTTPError) as failed:
            asking.http("GET", "/api/health/checks/alarms")
        assert failed.value.code == 503
        assert json.loads(failed.value.read())["alarms"] == [
            {"node": node.name, "resource": "memory"}
        ]
        assert asking.http("GET", "/api/health/checks/local-alarms") == {"status": "ok"}
        node.kill()
        node.start(same_ports=True)
        wait_for(lambda: told(["blocked: low on memory", "unblocked"]), 20, 0)
