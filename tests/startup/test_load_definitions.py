"""load_definitions: a definitions file imported at every start, as RabbitMQ's."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pika
import pytest

from tests.support.node import NodeProcess, wait_for


def test_definitions_are_imported_at_start(tmp_path: Path) -> None:
    definitions = tmp_path / "definitions.json"
    definitions.write_text(
        json.dumps(
            {
                "queues": [
                    {
                        "name": "boot",
                        "vhost": "/",
                        "durable": True,
                        "auto_delete": False,
                        "arguments": {},
                    },
                ],
                "parameters": [
                    {
                        "component": "federation-upstream",
                        "vhost": "/",
                        "name": "origin",
                        "value": {"uri": "amqp://127.0.0.1:1"},
                    },
                ],
                "policies": [
                    {
                        "name": "federate",
                        "vhost": "/",
                        "pattern": "^boot$",
                        "apply-to": "queues",
                        "definition": {"federation-upstream": "origin"},
                        "priority": 0,
                    },
                ],
            }
        )
    )
    config = tmp_path / "leveret.toml"
    config.write_text(f'load_definitions = "{definitions}"\n')
    node = NodeProcess(extra_args=["--config", str(config)]).start()
    try:

        def declared() -> bool:
            with pika.BlockingConnection(pika.URLParameters(node.url)) as conn:
                try:
                    conn.channel().queue_declare("boot", passive=True)
                except pika.exceptions.ChannelClosedByBroker:
                    return False
                return True

        wait_for(declared, 10, 0.1)
        wait_for(lambda: "imported definitions from" in node.log_tail(), 10, 0.1)
        # The policy applies the upstream to the queue: its federation link appears.
        request = urllib.request.Request(
            f"{node.management_url}/api/federation-links",
            headers={"Authorization": "Basic Z3Vlc3Q6Z3Vlc3Q="},  # guest:guest
        )

        def upstreams() -> list[str]:
            with urllib.request.urlopen(request, timeout=10) as response:
                return [link["upstream"] for link in json.loads(response.read())]

        wait_for(lambda: upstreams() == ["origin"], 10, 0.1)
    finally:
        node.cleanup()


def test_an_unreadable_definitions_file_stops_the_start(tmp_path: Path) -> None:
    config = tmp_path / "leveret.toml"
    config.write_text(f'load_definitions = "{tmp_path / "missing.json"}"\n')
    node = NodeProcess(extra_args=["--config", str(config)])
    try:
        with pytest.raises(RuntimeError, match="exited with 78") as exited:
            node.start()
        assert "cannot load definitions from" in str(exited.value)
    finally:
        node.cleanup()
