"""The compose stack the README documents: a 3-node cluster, a remote site federated from it,
and demo messages flowing from a producer on the cluster to a consumer at the remote site."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import uuid

import pytest

from tests.support.node import REPO, wait_for
from tests.support.ports import restartable_ports

COMPOSE_FILE = REPO / "deploy" / "compose.yaml"
# The host ports compose.yaml publishes the two brokers on.
PORT_VARIABLES = (
    "LEVERET_AMQP_PORT",
    "LEVERET_MGMT_PORT",
    "LEVERET_REMOTE_AMQP_PORT",
    "LEVERET_REMOTE_MGMT_PORT",
)


def compose_command() -> list[str]:
    """`docker compose` (v2) where it exists, else Debian's docker-compose."""
    v2 = subprocess.run(["docker", "compose", "version"], capture_output=True, check=False)
    if v2.returncode == 0:
        return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    if os.environ.get("CI") == "true":
        pytest.fail("neither docker compose nor docker-compose is installed")
    pytest.skip("neither docker compose nor docker-compose is installed")


def test_the_compose_stack_moves_demo_messages_across_federation(leveret_image: str) -> None:
    project = f"leveret-{uuid.uuid4().hex[:8]}"
    env = {
        **os.environ,
        "LEVERET_IMAGE": leveret_image,
        # Free host ports below the ephemeral range (tests/containers/published.py says why).
        **dict(zip(PORT_VARIABLES, map(str, restartable_ports(len(PORT_VARIABLES))), strict=True)),
    }
    compose = [*compose_command(), "-f", str(COMPOSE_FILE), "-p", project]

    def run(*args: str) -> str:
        done = subprocess.run(
            [*compose, *args], capture_output=True, text=True, env=env, timeout=300, check=False
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    try:
        run("up", "-d", "--no-build")
        federated = re.compile(r"received order \d+ via federation from amqp://node\d")
        wait_for(lambda: len(federated.findall(run("logs", "consumer"))) >= 5, 90, 1)
        status = json.loads(
            run("exec", "-T", "node3", "leveret", "ctl", "cluster_status", "--formatter", "json")
        )
        assert sorted(status["running_nodes"]) == [f"leveret@node{n}" for n in (1, 2, 3)]
    except BaseException:
        print(run("logs", "--tail", "30"))
        raise
    finally:
        run("down", "-v", "--remove-orphans")
