"""Running a test against Leveret, and against a real RabbitMQ when LEVERET_REFERENCE=rabbitmq."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import pytest


@dataclass(frozen=True)
class Target:
    """The broker a test talks to."""

    name: str
    url: str
    port: int


def targets() -> list[Any]:
    """Leveret always; RabbitMQ too when LEVERET_REFERENCE=rabbitmq, to check the expectations."""
    found: list[Any] = ["leveret"]
    if os.environ.get("LEVERET_REFERENCE") == "rabbitmq":
        found.append(pytest.param("rabbitmq", marks=pytest.mark.rabbitmq))
    return found


@pytest.fixture(params=targets())
def target(request: pytest.FixtureRequest) -> Target:
    if request.param == "rabbitmq":
        rabbit = request.getfixturevalue("rabbitmq")
        return Target("rabbitmq", rabbit.url, rabbit.amqp_port)
    node = request.getfixturevalue("node")
    return Target("leveret", node.url, node.port)


def known_bug(request: pytest.FixtureRequest, target: Target, reason: str) -> None:
    """Mark a test strictly expected to fail on Leveret only: RabbitMQ shows the right behaviour."""
    if target.name == "leveret":
        request.applymarker(pytest.mark.xfail(reason=reason, strict=True))
