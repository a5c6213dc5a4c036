"""The kit's scenario kinds against real brokers: fanout to several queues, message counts,
priorities, length limits, and the deep-queue restart measurement."""

from __future__ import annotations

from collections.abc import Iterator

import pika
import pika.exceptions
import pytest

from bench.backlog import measure_backlog
from bench.brokers import BrokerUnderTest, running_leveret, running_rabbitmq
from bench.perftest import PerfTestConfig, run_perftest
from tests.support.rabbitmq import find_rabbitmq

_FILL = (
    "-x",
    "1",
    "-y",
    "0",
    "-s",
    "100",
    "--confirm",
    "500",
    "--durable",
    "-f",
    "persistent",
    "-C",
    "5000",
    "-u",
    "bench-test-backlog",
    "--keep-queue",
)


@pytest.fixture(scope="module")
def leveret() -> Iterator[BrokerUnderTest]:
    with running_leveret(None) as broker:
        yield broker


def _message_count(url: str, queue: str) -> int | None:
    """The queue's ready messages, or None when it does not exist."""
    connection = pika.BlockingConnection(pika.URLParameters(url))
    try:
        return int(connection.channel().queue_declare(queue, passive=True).method.message_count)
    except pika.exceptions.ChannelClosedByBroker:
        return None
    finally:
        if connection.is_open:
            connection.close()


def test_fanout_reaches_every_queue_and_the_queues_are_removed_after(
    leveret: BrokerUnderTest,
) -> None:
    config = PerfTestConfig(
        uri=leveret.url,
        producers=1,
        consumers=3,
        size=100,
        confirm=200,
        prefetch=50,
        exchange="bench-test-fanout",
        exchange_type="fanout",
        queue_pattern="bench-test-fan-%d",
        queue_pattern_from=1,
        queue_pattern_to=3,
        durable=True,
        persistent=True,
        rate=500,
        duration=2,
        warmup=1,
        processes=2,
    )
    result = run_perftest(config)
    assert result["errors"] == []
    assert result["parameters"]["queues"] == [
        "bench-test-fan-1",
        "bench-test-fan-2",
        "bench-test-fan-3",
    ]
    published = sum(result["per_second"]["published"])
    consumed = sum(result["per_second"]["consumed"])
    assert published > 500
    # Each message reaches three queues; the last ones may still be in flight at the end.
    assert 0.9 * 3 * published <= consumed <= 3 * published
    assert _message_count(leveret.url, "bench-test-fan-1") is None


def test_a_message_count_ends_the_run_once_all_are_confirmed(leveret: BrokerUnderTest) -> None:
    config = PerfTestConfig(
        uri=leveret.url,
        producers=1,
        consumers=0,
        size=100,
        confirm=100,
        producer_messages=3000,
        queue="bench-test-priorities",
        keep_queue=True,
        queue_args={"x-max-priority": 5},
        random_priority=5,
        duration=60,
    )
    result = run_perftest(config)
    assert result["errors"] == []
    assert sum(result["per_second"]["confirmed"]) == 3000
    assert result["measured_s"] < 60
    connection = pika.BlockingConnection(pika.URLParameters(leveret.url))
    try:
        channel = connection.channel()
        assert (
            channel.queue_declare("bench-test-priorities", passive=True).method.message_count
            == 3000
        )
        # Priorities are random from 0 to 5, so among 3000 the first out has the highest.
        _method, properties, _body = channel.basic_get("bench-test-priorities", auto_ack=True)
        assert properties.priority == 5
        channel.queue_delete("bench-test-priorities")
    finally:
        connection.close()


def test_a_length_limited_queue_keeps_its_newest_messages(leveret: BrokerUnderTest) -> None:
    config = PerfTestConfig(
        uri=leveret.url,
        producers=1,
        consumers=0,
        size=100,
        confirm=100,
        producer_messages=2000,
        queue="bench-test-max-length",
        keep_queue=True,
        queue_args={"x-max-length": 100},
        duration=60,
    )
    result = run_perftest(config)
    assert result["errors"] == [] and sum(result["per_second"]["confirmed"]) == 2000
    assert _message_count(leveret.url, "bench-test-max-length") == 100
    connection = pika.BlockingConnection(pika.URLParameters(leveret.url))
    try:
        connection.channel().queue_delete("bench-test-max-length")
    finally:
        connection.close()


def _check_backlog(entry: dict[str, object]) -> None:
    assert entry["fill_confirmed"] == 5000
    accepting, declared, served = (
        entry["start_accepting_s"],
        entry["start_declare_ok_s"],
        entry["start_first_get_s"],
    )
    assert isinstance(accepting, float) and isinstance(declared, float)
    assert isinstance(served, float)
    assert 0 < accepting <= declared <= served
    assert isinstance(entry["rss_settled_mib"], float) and entry["rss_settled_mib"] > 0
    assert isinstance(entry["rss_serving_mib"], float) and entry["rss_serving_mib"] > 0


def test_leveret_serves_the_filled_queue_after_a_restart() -> None:
    with running_leveret(None) as broker:
        first_group = broker.process_group
        entry = measure_backlog(broker, _FILL, None, settle_s=0)
        assert broker.process_group != first_group
        assert _message_count(broker.url, "bench-test-backlog") is None  # removed after
    _check_backlog(entry)


@pytest.mark.rabbitmq
def test_rabbitmq_serves_the_filled_queue_after_a_restart() -> None:
    if find_rabbitmq() is None:
        pytest.skip("Debian's rabbitmq-server is not installed")
    with running_rabbitmq(None) as broker:
        entry = measure_backlog(broker, _FILL, None, settle_s=0)
    _check_backlog(entry)
