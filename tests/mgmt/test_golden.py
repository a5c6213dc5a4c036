"""Golden tests: Leveret's management answers have RabbitMQ 3.10's fields, codes and reasons.

The committed fixture holds RabbitMQ's answers to the scenario in `scenario.py`; the same scenario
runs here against Leveret. The slow variant captures from a real RabbitMQ again.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.mgmt.conftest import start_managed_node
from tests.mgmt.golden import compare, shape_problems
from tests.mgmt.rabbitmq_capture import FIXTURE
from tests.mgmt.scenario import Capture, capture, scenario, shape
from tests.support.rabbitmq import find_rabbitmq

# Refusals whose text comes from another regular-expression engine: only the status is compared.
STATUS_ONLY = {"policy_bad_pattern"}
# Refusals whose bodies carry this node's port numbers: compared by shape.
BY_SHAPE = {"health_port_not_listening"}


@pytest.fixture(scope="module")
def golden() -> dict[str, Any]:
    return json.loads(FIXTURE.read_text())


@pytest.fixture(scope="module")
def leveret_capture() -> Iterator[Capture]:
    managed = start_managed_node()
    try:
        with scenario(managed.api, managed.amqp_port):
            yield capture(managed.api)
    finally:
        managed.stop()


def refusal_problems(expected: dict[str, Any], actual: dict[str, Any]) -> list[str]:
    problems = []
    for name, wanted in sorted(expected.items()):
        got = actual.get(name)
        if got is None:
            problems.append(f"{name}: not asked")
            continue
        if name in STATUS_ONLY:
            if got["status"] != wanted["status"]:
                problems.append(f"{name}: status {got['status']}, RabbitMQ {wanted['status']}")
        elif name in BY_SHAPE:
            if got["status"] != wanted["status"] or shape(got["body"]) != shape(wanted["body"]):
                problems.append(f"{name}: {got} but RabbitMQ {wanted}")
        elif got != wanted:
            problems.append(f"{name}: {json.dumps(got)}\n    RabbitMQ: {json.dumps(wanted)}")
    return problems


def test_every_answer_has_rabbitmqs_fields(
    golden: dict[str, Any], leveret_capture: Capture
) -> None:
    problems = shape_problems(golden["shapes"], leveret_capture.shapes)
    assert not problems, "\n".join(problems)


def test_every_refusal_has_rabbitmqs_status_and_reason(
    golden: dict[str, Any], leveret_capture: Capture
) -> None:
    problems = refusal_problems(golden["refusals"], leveret_capture.refusals)
    assert not problems, "\n".join(problems)


def test_the_comparison_notices_a_missing_field(
    golden: dict[str, Any], leveret_capture: Capture
) -> None:
    damaged = dict(leveret_capture.shapes)
    queue = dict(damaged["queue"])
    del queue["messages_ready"]
    damaged["queue"] = queue
    assert shape_problems(golden["shapes"], damaged) == ["queue:messages_ready: missing"]
    assert compare("x", {"a": "number"}, {"a": "string"}) == [
        "x:a: RabbitMQ has a number, Leveret a string"
    ]


@pytest.mark.slow
@pytest.mark.rabbitmq
@pytest.mark.skipif(
    find_rabbitmq() is None and os.environ.get("CI", "").lower() != "true",
    reason="Debian's rabbitmq-server is not installed",
)
def test_a_fresh_rabbitmq_capture_matches_the_fixture_and_leveret(
    golden: dict[str, Any], leveret_capture: Capture
) -> None:
    from tests.mgmt.rabbitmq_capture import capture_rabbitmq

    fresh = capture_rabbitmq()
    assert not shape_problems(golden["shapes"], fresh["shapes"]), (
        "the fixture is stale: recapture it"
    )
    assert sorted(fresh["refusals"]) == sorted(golden["refusals"])
    problems = shape_problems(fresh["shapes"], leveret_capture.shapes)
    problems += refusal_problems(fresh["refusals"], leveret_capture.refusals)
    assert not problems, "\n".join(problems)
