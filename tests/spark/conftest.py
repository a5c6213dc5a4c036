"""One local SparkSession for every Spark test (starting one costs seconds), and helpers that
talk to the brokers directly with pika."""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

import pika
import pytest

from tests.spark.session import local_session


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    session = local_session(
        "leveret-tests",
        tmp_path_factory.mktemp("spark-scratch"),
        {
            "spark.sql.shuffle.partitions": "2",
            "spark.task.maxFailures": "1",  # a failed write fails the job at once
        },
    )
    try:
        yield session
    finally:
        session.stop()


def declare(url: str, *queues: str, arguments: dict[str, Any] | None = None) -> None:
    with pika.BlockingConnection(pika.URLParameters(url)) as conn:
        channel = conn.channel()
        for queue in queues:
            channel.queue_declare(queue, durable=True, arguments=arguments)


def count(url: str, queue: str) -> int:
    with pika.BlockingConnection(pika.URLParameters(url)) as conn:
        return int(conn.channel().queue_declare(queue, passive=True).method.message_count)


def publish(url: str, queue: str, bodies: list[bytes]) -> None:
    with pika.BlockingConnection(pika.URLParameters(url)) as conn:
        channel = conn.channel()
        channel.confirm_delivery()
        for body in bodies:
            channel.basic_publish("", queue, body, pika.BasicProperties(delivery_mode=2))


def drain(url: str, queue: str) -> list[bytes]:
    """Every message ready in `queue`, taken."""
    bodies = []
    with pika.BlockingConnection(pika.URLParameters(url)) as conn:
        channel = conn.channel()
        for _ in range(count(url, queue)):
            _method, _properties, body = channel.basic_get(queue, auto_ack=True)
            if body is None:
                break
            bodies.append(body)
    return bodies


def unacked(management_url: str, queue: str) -> int:
    request = urllib.request.Request(
        f"{management_url}/api/queues/%2F/{urllib.parse.quote(queue, safe='')}",
        headers={"Authorization": "Basic Z3Vlc3Q6Z3Vlc3Q="},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return int(json.loads(response.read()).get("messages_unacknowledged", 0))
