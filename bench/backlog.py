"""A deep durable queue: the broker's memory while it holds a million persistent messages, and how
long a restart takes until it serves them again."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from bench.brokers import BrokerUnderTest
from bench.client import AMQPClosed, Connection, run
from bench.generator import run_generator
from bench.perftest import build_parser, config_from_args
from bench.procinfo import UsageSampler, process_group_pids, rss_kib

_FILL_LIMIT_S = 900  # the fill is counted in messages; this only bounds a broker that stalls
_SETTLE_S = 10.0  # idle time after the fill (and after recovery) before memory is read again
_SERVE_TIMEOUT_S = 300.0
_POLL_S = 0.02
_MIB = 1024


def _rss_mib(broker: BrokerUnderTest) -> float:
    return round(rss_kib(process_group_pids(broker.process_group)) / _MIB, 1)


def _settled_rss_mib(broker: BrokerUnderTest, seconds: float) -> float:
    """Resident memory after `seconds` without traffic: collectors and pagers have had their
    turn."""
    time.sleep(seconds)  # a measurement interval, not a synchronisation
    return _rss_mib(broker)


async def _queue_count(url: str, queue: str) -> int:
    connection = await Connection.open(url, "leveret-bench-backlog-probe")
    try:
        _name, messages, _consumers = await connection.queue_declare(queue, passive=True)
        return messages
    finally:
        await connection.close()


async def _delete_queue(url: str, queue: str) -> None:
    connection = await Connection.open(url, "leveret-bench-backlog-teardown")
    try:
        await connection.queue_delete(queue)
    finally:
        await connection.close()


async def _wait_serving(url: str, queue: str, expected: int, timeout: float) -> dict[str, float]:
    """Wait until a passive declare reports `expected` messages, then answer a basic.get.

    Returns the seconds (from the call) at which each happened.
    """
    started = time.monotonic()
    deadline = started + timeout
    count = -1
    while time.monotonic() < deadline:
        try:
            count = await _queue_count(url, queue)
        except (OSError, AMQPClosed):
            count = -1  # not accepting yet, or the queue not recovered yet
        if count == expected:
            break
        await asyncio.sleep(_POLL_S)
    else:
        raise RuntimeError(
            f"queue {queue!r} held {count} messages, not {expected}, "
            f"{timeout:.0f} s after the restart"
        )
    counted = time.monotonic() - started
    connection = await Connection.open(url, "leveret-bench-backlog-get")
    try:
        if not await connection.basic_get(queue):
            raise RuntimeError(f"basic.get on {queue!r} found it empty after the restart")
        answered = time.monotonic() - started
    finally:
        await connection.close()
    return {"declare_ok_s": counted, "first_get_s": answered}


def measure_backlog(
    broker: BrokerUnderTest,
    fill_args: Sequence[str],
    generator_cpu: int | None,
    settle_s: float = _SETTLE_S,
) -> dict[str, Any]:
    """Fill a durable queue with `fill_args` (perftest flags with -C and -u), read the broker's
    memory, restart it (SIGTERM, start again) and time it until it serves that queue."""
    config = config_from_args(build_parser().parse_args(["--uri", broker.url, *fill_args]))
    expected = config.producer_messages * config.producers
    if not config.queue or not config.keep_queue or expected == 0:
        raise ValueError("a backlog fill needs -u QUEUE, --keep-queue and -C MESSAGES")
    with UsageSampler(broker.process_group) as sampler:
        fill = run_generator(broker.url, fill_args, _FILL_LIMIT_S, 0, generator_cpu)
    start_ns, end_ns = fill["measured_window_monotonic_ns"]
    confirmed = sum(fill["per_second"]["confirmed"])
    rss_filled = _rss_mib(broker)
    rss_settled = _settled_rss_mib(broker, settle_s)
    held = run(_queue_count(broker.url, config.queue))
    if held != expected:
        raise RuntimeError(f"the fill left {held} messages in {config.queue!r}, not {expected}")

    stop_started = time.monotonic()
    broker.stop_server()
    stop_s = time.monotonic() - stop_started
    start_started = time.monotonic()
    broker.start_server()
    accepting_s = time.monotonic() - start_started
    serving = run(_wait_serving(broker.url, config.queue, expected, _SERVE_TIMEOUT_S - accepting_s))
    rss_serving = _rss_mib(broker)
    rss_serving_settled = _settled_rss_mib(broker, settle_s)
    run(_delete_queue(broker.url, config.queue))
    cores = sampler.cores_used(start_ns, end_ns)
    machine = sampler.machine_cores_used(start_ns, end_ns)
    generator = fill["generator"]["cpu_cores_used"]
    written = sampler.write_bytes_per_second(start_ns, end_ns)
    rate = fill["confirmed_msg_s"]
    return {
        "kind": "backlog",
        "messages": expected,
        "fill": fill,
        "fill_confirmed": confirmed,
        "fill_msg_s": rate,
        "fill_peak_rss_mib": round(sampler.peak_rss_kib(start_ns, end_ns) / _MIB, 1),
        "fill_broker_cpu_cores_used": round(cores, 2) if cores is not None else None,
        "fill_other_cpu_cores_used": (
            round(max(machine - cores - generator, 0.0), 2)
            if machine is not None and cores is not None
            else None
        ),
        "fill_disk_write_bytes_per_msg": round(written / rate) if written and rate else None,
        "rss_filled_mib": rss_filled,
        "rss_settled_mib": rss_settled,
        "stop_s": round(stop_s, 2),
        "start_accepting_s": round(accepting_s, 2),
        "start_declare_ok_s": round(accepting_s + serving["declare_ok_s"], 2),
        "start_first_get_s": round(accepting_s + serving["first_get_s"], 2),
        "rss_serving_mib": rss_serving,
        "rss_serving_settled_mib": rss_serving_settled,
    }
