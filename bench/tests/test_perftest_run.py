"""A short perftest run against a real RabbitMQ moves messages and reports them consistently."""

from __future__ import annotations

import pytest

from bench.perftest import PerfTestConfig, run_perftest
from tests.support.rabbitmq import RabbitNode, rabbitmq

__all__ = ["rabbitmq"]  # the session fixture, imported so pytest finds it here


@pytest.mark.rabbitmq
@pytest.mark.parametrize("auto_ack", [True, False])
def test_a_two_second_run_publishes_confirms_and_consumes(
    rabbitmq: RabbitNode,
    auto_ack: bool,
) -> None:
    config = PerfTestConfig(
        uri=rabbitmq.url,
        producers=1,
        consumers=1,
        size=100,
        confirm=200,
        prefetch=50,
        auto_ack=auto_ack,
        rate=2000,
        duration=2,
        warmup=1,
        processes=2,
    )
    result = run_perftest(config)
    assert result["errors"] == []
    assert result["broker"]["product"] == "RabbitMQ"
    # Only what no slow machine can break: the rate cap holds, and nothing is confirmed or
    # consumed that was not published (a loaded CI machine may lag the consumer by seconds).
    assert 0 < result["published_msg_s"] <= 2100
    assert result["confirmed_msg_s"] > 0
    assert result["consumed_msg_s"] > 0
    per_second = result["per_second"]
    assert sum(per_second["confirmed"]) <= sum(per_second["published"])
    assert sum(per_second["consumed"]) <= sum(per_second["published"])
    assert result["nacked_msg_s"] == 0
    latency = result["latency_us"]
    assert latency["samples"] > 0
    assert 0 < latency["p50"] <= latency["p95"] <= latency["p99"] <= latency["max"]
    assert result["generator"]["processes"] == 2
