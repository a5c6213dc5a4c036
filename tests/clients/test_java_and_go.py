"""The RabbitMQ Java and Go clients across a 3-node cluster: a queue on A, publishers on B,
consumers on C, with confirms and nacks, returns, prefetch, dead-lettering, direct reply-to and
cancel notices.

Each client runs a program of its own language (tests/clients/java, tests/clients/go), built
here from Debian's packages of the clients, that prints a line per check and fails at the first
that does not hold.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cluster.processes import Cluster, running_cluster
from tests.support.rabbitmq import rabbitmq_missing_action

HERE = Path(__file__).resolve().parent
JAVA_JARS = [
    Path("/usr/share/java/amqp-client.jar"),  # Debian's librabbitmq-client-java
    Path("/usr/share/java/slf4j-api.jar"),
    Path("/usr/share/java/slf4j-nop.jar"),
]
GO_PATH = Path("/usr/share/gocode")  # Debian's golang-github-rabbitmq-amqp091-go-dev
GO_CLIENT = GO_PATH / "src/github.com/rabbitmq/amqp091-go"
RUN_SECONDS = 120


def _require(present: bool, what: str) -> None:
    """Skip when a client's toolchain is missing (fail under CI, whose .ci/run installs it)."""
    if present:
        return
    if rabbitmq_missing_action(os.environ.get("CI", "").lower() == "true") == "fail":
        pytest.fail(f"{what} is not installed (required when CI=true)")
    pytest.skip(f"{what} is not installed")


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with running_cluster(3) as running:
        yield running


def _urls(cluster: Cluster) -> list[str]:
    """The nodes' AMQP URIs, naming the vhost "/" (an empty path names the vhost "" to the
    Java client, as the AMQP URI spec says)."""
    urls = []
    for node in cluster.nodes:
        assert node.process is not None
        urls.append(node.process.url.rstrip("/") + "/%2F")
    return urls


def _run(command: list[str], **kwargs: object) -> str:
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=RUN_SECONDS, check=False, **kwargs
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{command[0]} failed:\n{output}"
    return done.stdout


def test_the_java_client_uses_queues_across_nodes(
    cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> None:
    _require(shutil.which("javac") is not None, "javac (openjdk-17-jdk-headless)")
    _require(all(jar.exists() for jar in JAVA_JARS), "the Java client (librabbitmq-client-java)")
    classes = tmp_path_factory.mktemp("java")
    classpath = os.pathsep.join(str(jar) for jar in JAVA_JARS)
    _run(["javac", "-cp", classpath, "-d", str(classes), str(HERE / "java" / "CrossNode.java")])
    output = _run(
        ["java", "-cp", f"{classes}{os.pathsep}{classpath}", "CrossNode", *_urls(cluster)]
    )
    assert output.splitlines() == [
        "ok 100 persistent messages published through B and confirmed",
        "ok consumed through C in publishing order, prefetch 10",
        "ok headers keep their types (a Long stays a Long, an Integer an Integer)",
        "ok the rejected message reaches the dead-letter queue on C",
        "ok x-death says rejected once, its count a Long",
        "ok a request through B, served through C, answered by direct reply-to",
        "ok another connection is refused the exclusive queue: 405",
        "ok a publish through B to a queue on A with room is acked",
        "ok one to the full queue (reject-publish) is nacked",
        "ok an unroutable mandatory publish is returned (312), then acked",
        "ok a consumer through B hears basic.cancel when its queue is deleted through C",
    ]


def test_the_go_client_uses_queues_across_nodes(
    cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> None:
    _require(shutil.which("go") is not None, "Go (golang-go)")
    _require(GO_CLIENT.exists(), "the Go client (golang-github-rabbitmq-amqp091-go-dev)")
    build = tmp_path_factory.mktemp("go")
    program = build / "crossnode"
    environment = {
        **os.environ,
        "GO111MODULE": "off",  # Debian's Go libraries are a GOPATH, not modules
        "GOPATH": f"{build}{os.pathsep}{GO_PATH}",
        "GOCACHE": str(build / "cache"),
        "GOFLAGS": "",
    }
    _run(["go", "build", "-o", str(program), "."], cwd=HERE / "go" / "crossnode", env=environment)
    output = _run([str(program), *_urls(cluster)])
    assert output.splitlines() == [
        "ok 100 persistent messages published through B and confirmed",
        "ok consumed through C in publishing order, prefetch 10",
        "ok headers keep their types (int64 stays int64, int32 stays int32)",
        "ok the rejected job reaches the dead-letter queue on C",
        "ok x-death says rejected once, its count an int64",
        "ok a consumer through B hears basic.cancel when its queue is deleted through C",
    ]
