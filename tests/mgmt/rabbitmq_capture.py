"""Run the golden scenario against a real RabbitMQ and write (or return) its answers.

`python -m tests.mgmt.rabbitmq_capture` rewrites the committed fixture; the slow golden test
calls `capture_rabbitmq()` to compare a fresh capture with the committed one and with Leveret.
"""

from __future__ import annotations

import json
import socket
import sys
import urllib.request
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from tests.mgmt.scenario import Api, capture, scenario
from tests.support.rabbitmq import start_rabbitmq

FIXTURE = Path(__file__).parent / "fixtures" / "rabbitmq-3.10.8.json"
PLUGINS = "rabbitmq_management,rabbitmq_prometheus,rabbitmq_federation"


def metric_families(text: str) -> dict[str, dict[str, Any]]:
    """Metric families (as prometheus_client's parser names them) with type and label names."""
    found: dict[str, dict[str, Any]] = {}
    for family in text_string_to_metric_families(text):
        entry = found.setdefault(family.name, {"type": family.type, "labels": set()})
        for sample in family.samples:
            entry["labels"].update(sample.labels)
    return {
        name: {"type": e["type"], "labels": sorted(e["labels"])}
        for name, e in sorted(found.items())
    }


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def capture_rabbitmq() -> dict[str, Any]:
    prometheus_port = _free_port()
    node = start_rabbitmq(
        management=True,
        extra_env={"RABBITMQ_ENABLED_PLUGINS": PLUGINS},
        extra_config=[f"prometheus.tcp.port = {prometheus_port}", "prometheus.tcp.ip = 127.0.0.1"],
    )
    try:
        assert node.mgmt_port is not None
        api = Api("127.0.0.1", node.mgmt_port)
        with scenario(api, node.amqp_port):
            captured = capture(api)
            metrics = {}
            for path in ("/metrics", "/metrics/per-object"):
                with urllib.request.urlopen(
                    f"http://127.0.0.1:{prometheus_port}{path}", timeout=30
                ) as response:
                    metrics[path] = metric_families(response.read().decode("utf-8"))
        version = api.get("/api/overview")["rabbitmq_version"]
    finally:
        node.stop()
    return {
        "captured_from": f"RabbitMQ {version}",
        "shapes": captured.shapes,
        "refusals": captured.refusals,
        "metrics": metrics,
    }


def main() -> int:
    document = capture_rabbitmq()
    FIXTURE.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")
    print(f"wrote {FIXTURE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
