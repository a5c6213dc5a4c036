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
    # A fixed rate of 2000 msg/s is far below what any broker here sustains.
    assert 1500 <= result["published_msg_s"] <= 2100
    assert result["confirmed_msg_s"] >= 0.9 * result["published_msg_s"]
    assert result["consumed_msg_s"] >= 0.9 * result["published_msg_s"]
    latency = result["latency_us"]
    assert latency["samples"] > 1000
    assert 0 < latency["p50"] <= latency["p95"] <= latency["p99"] <= latency["max"]
    assert result["generator"]["processes"] == 2
