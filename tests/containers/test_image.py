"""Leveret's image through LeveretContainer, as users' tests would use it."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.request
import uuid

import pika

from tests.containers.published import leveret_container
from tests.support.node import wait_for


def docker(*args: str) -> str:
    done = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_container_serves_clients_and_keeps_its_data(leveret_image: str) -> None:
    volume = f"leveret-test-{uuid.uuid4().hex[:8]}"
    try:
        with leveret_container(leveret_image).with_volume_mapping(
            volume, "/var/lib/leveret", "rw"
        ) as node:
            with pika.BlockingConnection(pika.URLParameters(node.get_connection_url())) as conn:
                channel = conn.channel()
                channel.queue_declare("kept", durable=True)
                channel.confirm_delivery()
                channel.basic_publish("", "kept", b"on disk", pika.BasicProperties(delivery_mode=2))
            container = node.get_wrapped_container()
            # Not root, and the image's health check says healthy once the node is ready.
            assert docker("exec", container.id, "id", "-u") == "999"
            wait_for(
                lambda: (
                    docker("inspect", "--format", "{{.State.Health.Status}}", container.id)
                    == "healthy"
                ),
                60,
                0.5,
            )
            # SIGTERM is a clean stop, and a quick one.
            began = time.monotonic()
            docker("stop", "--time", "30", container.id)
            assert time.monotonic() - began < 10
            assert docker("inspect", "--format", "{{.State.ExitCode}}", container.id) == "0"
        # A new container on the same volume has the message.
        with leveret_container(leveret_image).with_volume_mapping(
            volume, "/var/lib/leveret", "rw"
        ) as node:
            with pika.BlockingConnection(pika.URLParameters(node.get_connection_url())) as conn:
                _, _, body = conn.channel().basic_get("kept", auto_ack=True)
            assert body == b"on disk"
            with urllib.request.urlopen(node.get_management_url() + "/health/live", timeout=5) as r:
                assert json.loads(r.read()) == {"status": "ok"}
    finally:
        subprocess.run(["docker", "volume", "rm", "-f", volume], capture_output=True, check=False)
