"""The RabbitMQ launcher starts an isolated node that real clients can use, and stops all of it."""

from __future__ import annotations

import base64
import json
import os
import socket
import urllib.request

import pika
import pytest

from tests.support.rabbitmq import (
    RabbitMQStartError,
    RabbitNode,
    find_rabbitmq,
    rabbitmq,
    rabbitmq_missing_action,
    start_rabbitmq,
)

__all__ = ["rabbitmq"]  # the session fixture, imported so pytest finds it here

needs_rabbitmq = pytest.mark.skipif(
    find_rabbitmq() is None and os.environ.get("CI", "").lower() != "true",
    reason="Debian's rabbitmq-server is not installed",
)


def _publish_and_get(url: str, queue: str, body: bytes) -> bytes | None:
    connection = pika.BlockingConnection(pika.URLParameters(url))
    try:
        channel = connection.channel()
        channel.queue_declare(queue=queue)
        channel.confirm_delivery()
        channel.basic_publish(exchange="", routing_key=queue, body=body)
        _method, _properties, received = channel.basic_get(queue=queue, auto_ack=True)
        return received
    finally:
        connection.close()


def _port_refuses(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2.0):
            return False
    except OSError:
        return True


def _pid_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # A reaped child cannot linger; a zombie still has a /proc entry with state Z.
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


@pytest.mark.rabbitmq
@needs_rabbitmq
def test_started_node_serves_amqp_and_management_then_stops_completely() -> None:
    node = start_rabbitmq(management=True)
    with node:
        assert _publish_and_get(node.url, "launcher-check", b"hello") == b"hello"
        assert node.mgmt_port is not None
        request = urllib.request.Request(
            f"http://127.0.0.1:{node.mgmt_port}/api/overview",
            headers={"Authorization": "Basic " + base64.b64encode(b"guest:guest").decode()},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            assert json.load(response)["node"] == node.node_name
        assert node.epmd_process is not None
        epmd_pid = node.epmd_process.pid
    assert node.process.returncode is not None
    assert _pid_gone(node.pid) and _pid_gone(epmd_pid)
    assert _port_refuses(node.amqp_port) and _port_refuses(node.epmd_port)
    assert not node.base_dir.exists()


@pytest.mark.rabbitmq
@needs_rabbitmq
def test_session_fixture_gives_a_usable_node(rabbitmq: RabbitNode) -> None:
    assert rabbitmq.url == f"amqp://guest:guest@127.0.0.1:{rabbitmq.amqp_port}/"
    assert _publish_and_get(rabbitmq.url, "fixture-check", b"\x00\xffbinary") == b"\x00\xffbinary"


@pytest.mark.rabbitmq
@needs_rabbitmq
def test_a_node_that_cannot_start_raises_with_its_log_tail() -> None:
    with pytest.raises(RabbitMQStartError) as failure:
        start_rabbitmq(extra_config=["no_such_setting.at_all = 1"], timeout=60)
    assert "no_such_setting" in str(failure.value) or "configuration" in str(failure.value)


def test_missing_rabbitmq_skips_locally_and_fails_under_ci() -> None:
    assert rabbitmq_missing_action(ci=False) == "skip"
    assert rabbitmq_missing_action(ci=True) == "fail"


def test_find_rabbitmq_honours_an_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEVERET_RABBITMQ_SERVER", "/nonexistent/rabbitmq-server")
    assert find_rabbitmq() is None
    monkeypatch.setenv("LEVERET_RABBITMQ_SERVER", "/bin/sh")
    assert find_rabbitmq() == "/bin/sh"


@needs_rabbitmq
def test_three_nodes_join_one_cluster_that_routes_between_them() -> None:
    from tests.support.rabbitmq_cluster import rabbitmq_cluster

    with rabbitmq_cluster(3) as cluster:
        names = sorted(node.node_name for node in cluster.nodes)
        for node in cluster.nodes:
            assert cluster.running_nodes(node) == names
        home, publisher, consumer = cluster.nodes
        declare = pika.BlockingConnection(pika.URLParameters(home.url))
        declare.channel().queue_declare("across-nodes")
        declare.close()
        publishing = pika.BlockingConnection(pika.URLParameters(publisher.url))
        channel = publishing.channel()
        channel.confirm_delivery()
        channel.basic_publish("", "across-nodes", b"hop")
        publishing.close()
        consuming = pika.BlockingConnection(pika.URLParameters(consumer.url))
        _method, _properties, body = consuming.channel().basic_get("across-nodes", auto_ack=True)
        consuming.close()
        assert body == b"hop"
    for node in cluster.nodes:
        assert node.process.poll() is not None and not node.base_dir.exists()
    assert cluster.epmd_process is not None and cluster.epmd_process.poll() is not None
