"""The Docker engine and Leveret's image for the container tests.

Under CI=true a missing engine fails these tests; elsewhere (a laptop without Docker) they skip
and say why. The image is built from deploy/Dockerfile on the Debian base deploy/base-image.sh
makes, since no registry is reachable here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.support.docker_engine import DockerEngine, DockerUnavailable, host_networking
from tests.support.node import REPO

IMAGE = "leveret:test"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/containers/" in item.nodeid:
            item.add_marker(pytest.mark.docker)


@pytest.fixture(scope="session")
def docker_engine() -> Iterator[DockerEngine]:
    engine = DockerEngine()
    before = host_networking()
    try:
        engine.start()
    except DockerUnavailable as why:
        if os.environ.get("CI") == "true":
            pytest.fail(str(why))
        pytest.skip(str(why))
    os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")  # Ryuk's image can't be pulled
    os.environ.setdefault("TESTCONTAINERS_CONNECTION_MODE", "docker_host")
    try:
        yield engine
    finally:
        owned = engine.owned
        engine.stop()
        if owned:  # the host is as the tests found it
            assert host_networking() == before


@pytest.fixture(scope="session")
def leveret_image(docker_engine: DockerEngine) -> str:
    built = subprocess.run(
        [str(REPO / "deploy" / "build-image.sh"), IMAGE, sys.executable],
        capture_output=True,
        text=True,
        env={**os.environ, "EXTRAS": "fast,demo"},  # the compose stack's demo needs aio-pika
        timeout=900,
        check=False,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    return IMAGE
