"""Federated queues, Leveret → Leveret beside RabbitMQ → RabbitMQ (its own plugin), in one run.

For each kind, two brokers of that kind run side by side, the upstream pinned to core 0 and the
downstream to core 1; the downstream queue is federated from the upstream queue of the same name
by a `federation-upstream` parameter and a policy, both set through the management HTTP API, the
same way on both kinds. Measured: messages/s moved to a downstream consumer from a preloaded
upstream queue (per ack-mode), the link's basic.consume / basic.cancel per 10,000 messages with a
slow downstream consumer (counted by a proxy in front of the upstream), messages moved with no
downstream consumer, and the time from a consumer appearing to its first federated message.

    .venv/bin/python -m bench.federation --write
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import re
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

from bench import wire
from bench.amqp_proxy import BASIC_CANCEL, BASIC_CONSUME, CountingProxy
from bench.brokers import (
    BrokerUnderTest,
    default_leveret_command,
    running_leveret,
    running_rabbitmq,
)
from bench.client import CHANNEL, Connection, parse_uri
from bench.client import run as run_async
from bench.cluster_bench import rabbitmq_version
from bench.perftest import PerfTestConfig, run_perftest
from bench.sections import marks, write_section
from tests.federation.test_rabbitmq_interop import FEDERATION_PLUGINS, rabbit_http

SECTION = "federation.py"
START_MARK, END_MARK = marks(SECTION)
SIZE = 100
LINK_PREFETCH = 1000
CONSUMER_PREFETCH = 1000
THROUGHPUT_MODES = ("on-confirm", "no-ack", "on-publish")
CYCLE_PREFETCHES = (1, 10)
CYCLE_MESSAGES = 10_000
IDLE_MESSAGES = 1000
FIRST_BATCH = 10  # messages upstream for each time-to-first-message round
_NS = 1_000_000_000


@dataclass(frozen=True)
class Settings:
    messages: int  # preloaded for each throughput scenario
    cap: float  # most seconds any one consumer waits for its messages
    idle: float  # seconds watched with no downstream consumer
    rounds: int  # time-to-first-message repetitions


@dataclass
class Pair:
    """An upstream and a downstream broker of one kind."""

    kind: str
    upstream: BrokerUnderTest
    downstream: BrokerUnderTest

    def federate(self, queue: str, ack_mode: str, upstream_port: int | None = None) -> None:
        """Federate `queue` downstream from `queue` upstream (through `upstream_port`, a proxy,
        when given), declare both durable, and wait until the link runs."""
        port = upstream_port or parse_uri(self.upstream.url).port
        # %2F names the vhost "/" to both kinds (RabbitMQ reads a bare "/" as the vhost "").
        value = {
            "uri": f"amqp://guest:guest@127.0.0.1:{port}/%2F",
            "prefetch-count": LINK_PREFETCH,
            "ack-mode": ack_mode,
            "reconnect-delay": 1,
        }
        rabbit_http(
            self.downstream,
            "PUT",
            f"/api/parameters/federation-upstream/%2F/{queue}",
            {"value": value},
        )
        policy = {"pattern": f"^{re.escape(queue)}$", "definition": {"federation-upstream": queue}}
        rabbit_http(self.downstream, "PUT", f"/api/policies/%2F/{queue}", policy)
        run_async(_declare(self.upstream.url, queue))
        run_async(_declare(self.downstream.url, queue))
        _wait(lambda: self.link_status(queue) == "running", 60, f"{self.kind} link of {queue}")

    def link_status(self, queue: str) -> str | None:
        for link in rabbit_http(self.downstream, "GET", "/api/federation-links") or []:
            if link.get("queue") == queue:
                return str(link.get("status"))
        return None

    def preload(self, queue: str, count: int, persistent: bool, cap: float) -> None:
        """`count` messages of SIZE bytes into the upstream queue, each confirmed."""
        config = PerfTestConfig(
            uri=self.upstream.url,
            consumers=0,
            size=SIZE,
            queue=queue,
            durable=True,
            persistent=persistent,
            confirm=1000,
            producer_messages=count,
            duration=int(cap),
            keep_queue=True,
        )
        run_perftest(config)
        held = counts(self.upstream.url, queue)[0]
        if held < count:
            raise RuntimeError(f"{self.kind}: upstream {queue} holds {held} of {count} preloaded")


def _wait(condition: Callable[[], Any], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout:.0f} s")
        time.sleep(0.05)


async def _declare(url: str, queue: str) -> None:
    connection = await Connection.open(url, "federation-bench")
    try:
        await connection.queue_declare(queue, durable=True)
    finally:
        await connection.close()


async def _counts(url: str, queue: str) -> tuple[int, int]:
    connection = await Connection.open(url, "federation-bench")
    try:
        _name, messages, consumers = await connection.queue_declare(queue, passive=True)
        return messages, consumers
    finally:
        await connection.close()


def counts(url: str, queue: str) -> tuple[int, int]:
    """(ready messages, consumers) of a queue, by a passive declare."""
    return run_async(_counts(url, queue))


async def _purge(url: str, queue: str) -> None:
    connection = await Connection.open(url, "federation-bench")
    try:
        await connection.queue_purge(queue)
    finally:
        await connection.close()


# -- the downstream consumer ------------------------------------------------------------------


@dataclass(frozen=True)
class Received:
    count: int
    consume_ns: int  # when basic.consume was sent
    first_ns: int | None
    last_ns: int | None

    @property
    def rate(self) -> float:
        """Messages per second from the first message to the last (0 with fewer than two)."""
        if self.first_ns is None or self.last_ns is None or self.last_ns <= self.first_ns:
            return 0.0
        return (self.count - 1) * _NS / (self.last_ns - self.first_ns)

    @property
    def first_seconds(self) -> float | None:
        return None if self.first_ns is None else (self.first_ns - self.consume_ns) / _NS


async def consume(url: str, queue: str, count: int, prefetch: int, cap: float) -> Received:
    """Consume `queue` with manual acks (one basic.ack per message, sent as it arrives) until
    `count` messages came or `cap` seconds passed since basic.consume."""
    connection = await Connection.open(url, "federation-bench-consumer")
    await connection.basic_qos(prefetch)
    done = asyncio.Event()
    got = 0
    first_ns: int | None = None
    last_ns: int | None = None
    ack = wire.BASIC_ACK_FRAME.pack

    def on_deliveries(received_ns: int, tags: list[int], _stamps: list[int]) -> None:
        nonlocal got, first_ns, last_ns
        if first_ns is None:
            first_ns = received_ns
        last_ns = received_ns
        got += len(tags)
        connection.write(b"".join([ack(1, CHANNEL, 13, 60, 80, tag, 0, 0xCE) for tag in tags]))
        if got >= count:
            done.set()

    consume_ns = time.monotonic_ns()
    try:
        await connection.basic_consume(queue, "bench", no_ack=False, on_deliveries=on_deliveries)
        async with asyncio.timeout(cap):
            await done.wait()
    except TimeoutError:
        pass  # report what arrived
    finally:
        connection.stop_handlers()
        await connection.close()
    return Received(got, consume_ns, first_ns, last_ns)


# -- scenarios --------------------------------------------------------------------------------


def throughput(pair: Pair, ack_mode: str, settings: Settings) -> Received:
    queue = f"fed-bench-{ack_mode}"
    pair.federate(queue, ack_mode)
    pair.preload(queue, settings.messages, persistent=True, cap=settings.cap)
    received = run_async(
        consume(pair.downstream.url, queue, settings.messages, CONSUMER_PREFETCH, settings.cap)
    )
    print(f"  {ack_mode}: {received.count} messages, {received.rate:,.0f} msg/s", flush=True)
    return received


@dataclass(frozen=True)
class Cycles:
    prefetch: int
    moved: int
    consumes: int
    cancels: int
    seconds: float

    @property
    def per_10k(self) -> float:
        """Consume/cancel cycles (basic.consume sent) per 10,000 messages moved."""
        return self.consumes * CYCLE_MESSAGES / self.moved if self.moved else float("inf")


def cycles(pair: Pair, settings: Settings) -> list[Cycles]:
    queue = "fed-bench-cycles"
    found: list[Cycles] = []
    proxy = CountingProxy(parse_uri(pair.upstream.url).port).start()
    try:
        pair.federate(queue, "on-confirm", upstream_port=proxy.port)
        for prefetch in CYCLE_PREFETCHES:
            _settle(pair, queue)
            pair.preload(queue, CYCLE_MESSAGES, persistent=False, cap=settings.cap)
            consumes, cancels = proxy.count(BASIC_CONSUME), proxy.count(BASIC_CANCEL)
            received = run_async(
                consume(pair.downstream.url, queue, CYCLE_MESSAGES, prefetch, settings.cap)
            )
            seconds = ((received.last_ns or received.consume_ns) - received.consume_ns) / _NS
            result = Cycles(
                prefetch,
                received.count,
                proxy.count(BASIC_CONSUME) - consumes,
                proxy.count(BASIC_CANCEL) - cancels,
                seconds,
            )
            print(
                f"  prefetch {prefetch}: {result.moved} moved in {seconds:.1f} s, "
                f"{result.consumes} consumes, {result.cancels} cancels",
                flush=True,
            )
            found.append(result)
        if proxy.errors:
            raise RuntimeError(f"the counting proxy could not parse a stream: {proxy.errors[0]!r}")
    finally:
        proxy.stop()
    return found


def _settle(pair: Pair, queue: str) -> None:
    """Wait until the link has no consumer upstream, then empty both queues."""
    _wait(lambda: counts(pair.upstream.url, queue)[1] == 0, 30, f"{pair.kind} link cancel")
    run_async(_purge(pair.upstream.url, queue))
    run_async(_purge(pair.downstream.url, queue))


def no_demand(pair: Pair, settings: Settings) -> int:
    """Messages that left a loaded upstream queue in `settings.idle` s with no consumer here."""
    queue = "fed-bench-idle"
    pair.federate(queue, "on-confirm")
    pair.preload(queue, IDLE_MESSAGES, persistent=False, cap=settings.cap)
    time.sleep(settings.idle)  # the measurement itself: a fixed window of no demand
    left = counts(pair.upstream.url, queue)[0]
    print(f"  no consumer, {settings.idle:.0f} s: {IDLE_MESSAGES - left} moved", flush=True)
    return IDLE_MESSAGES - left


def first_message(pair: Pair, settings: Settings) -> list[float]:
    """Seconds from basic.consume downstream to the first federated delivery, per round."""
    queue = "fed-bench-first"
    pair.federate(queue, "on-confirm")
    found: list[float] = []
    for _ in range(settings.rounds):
        _settle(pair, queue)
        pair.preload(queue, FIRST_BATCH, persistent=False, cap=settings.cap)
        received = run_async(
            consume(pair.downstream.url, queue, FIRST_BATCH, CONSUMER_PREFETCH, settings.cap)
        )
        if received.first_seconds is not None:
            found.append(received.first_seconds)
    print(f"  time to first message: {[f'{s * 1000:.1f} ms' for s in found]}", flush=True)
    return found


def measure(pair: Pair, settings: Settings) -> dict[str, Any]:
    print(f"{pair.kind} → {pair.kind}", flush=True)
    figures: dict[str, Any] = {mode: throughput(pair, mode, settings) for mode in THROUGHPUT_MODES}
    figures["cycles"] = cycles(pair, settings)
    figures["idle"] = no_demand(pair, settings)
    figures["first"] = first_message(pair, settings)
    return figures


@contextmanager
def leveret_pair() -> Iterator[Pair]:
    with ExitStack() as stack:
        brokers = [
            stack.enter_context(
                running_leveret(
                    cpu, [*default_leveret_command(), "--node-name", f"{name}@localhost"]
                )
            )
            for cpu, name in ((0, "upstream"), (1, "downstream"))
        ]
        yield Pair("Leveret", *brokers)


@contextmanager
def rabbitmq_pair() -> Iterator[Pair]:
    with ExitStack() as stack:
        brokers = [
            stack.enter_context(running_rabbitmq(cpu, management=True, plugins=FEDERATION_PLUGINS))
            for cpu in (0, 1)
        ]
        yield Pair("RabbitMQ", *brokers)


# -- the report -------------------------------------------------------------------------------


def _ratio(ours: float, theirs: float) -> str:
    if theirs == 0:
        return "-" if ours == 0 else "∞"
    return f"{ours / theirs:.2f}x"


def report(leveret: dict[str, Any], rabbit: dict[str, Any], settings: Settings, load: str) -> str:
    lines = [
        START_MARK,
        "## Federated queues (bench/federation.py)",
        "",
        "Two brokers of one kind on loopback, upstream pinned to core 0, downstream to core 1 "
        f"(RabbitMQ {rabbitmq_version()} with `+S 1:1` and its rabbitmq_federation plugin; "
        "Leveret with its own links); the bench process (consumer, preloading, proxy) unpinned. "
        "Federation is set the same way on both: a `federation-upstream` parameter (uri of the "
        f"upstream, prefetch-count {LINK_PREFETCH}, the scenario's ack-mode) and a policy "
        "`federation-upstream` on the queue, through the management HTTP API. Queues are "
        f"durable. Throughput: {settings.messages:,} persistent {SIZE} B messages preloaded "
        "upstream, then one downstream consumer (manual ack, one basic.ack per message, "
        f"prefetch {CONSUMER_PREFETCH}); msg/s from its first message to its last "
        f"(at most {settings.cap:.0f} s). The other scenarios use transient {SIZE} B messages.",
        "",
        "| scenario | Leveret | RabbitMQ | Leveret / RabbitMQ | goal |",
        "| --- | --: | --: | --: | --- |",
    ]
    for mode in THROUGHPUT_MODES:
        ours, theirs = leveret[mode], rabbit[mode]
        lines.append(
            f"| msg/s moved to a downstream consumer, ack-mode {mode} "
            f"({ours.count:,} / {theirs.count:,} arrived) | {ours.rate:,.0f} | "
            f"{theirs.rate:,.0f} | {_ratio(ours.rate, theirs.rate)} | ≥ 1.0x |"
        )
    for ours, theirs in zip(leveret["cycles"], rabbit["cycles"], strict=True):
        lines.append(
            f"| consume/cancel cycles per 10,000 messages, downstream prefetch {ours.prefetch} "
            f"| {ours.per_10k:,.0f} | {theirs.per_10k:,.0f} | "
            f"{_ratio(ours.per_10k, theirs.per_10k)} | ≤ 0.1x |"
        )
    lines.append(
        f"| messages moved in {settings.idle:.0f} s with no downstream consumer "
        f"| {leveret['idle']} | {rabbit['idle']} | | 0 |"
    )
    ours_first = statistics.median(leveret["first"]) * 1000
    theirs_first = statistics.median(rabbit["first"]) * 1000
    lines += [
        f"| ms from a downstream consumer appearing to its first message (median of "
        f"{settings.rounds}) | {ours_first:.1f} | {theirs_first:.1f} | "
        f"{_ratio(ours_first, theirs_first)} | ≤ RabbitMQ's |",
        "",
        "Consume/cancel cycles: the upstream URI points at a proxy (bench/amqp_proxy.py) that "
        "counts the basic.consume and basic.cancel methods the downstream's link sends; "
        f"{CYCLE_MESSAGES:,} messages preloaded, one downstream consumer acking each message "
        f"as it arrives, ack-mode on-confirm, at most {settings.cap:.0f} s (a capped run is "
        "normalised to 10,000 messages).",
        "",
        "| downstream prefetch | broker | moved | seconds | basic.consume | basic.cancel |",
        "| --: | --- | --: | --: | --: | --: |",
    ]
    for kind, figures in (("Leveret", leveret), ("RabbitMQ", rabbit)):
        for run in figures["cycles"]:
            lines.append(
                f"| {run.prefetch} | {kind} | {run.moved:,} | {run.seconds:.1f} | "
                f"{run.consumes:,} | {run.cancels:,} |"
            )
    lines += [
        "",
        f"No demand: link running, {IDLE_MESSAGES:,} messages upstream, no downstream consumer; "
        "the upstream queue's count read after the window. Time to first message: link running "
        f"and idle, {FIRST_BATCH} messages upstream; from basic.consume on the downstream to "
        "the first delivery (the connection and basic.qos come before), each round drained and "
        "the link back to idle before the next. Leveret "
        + ", ".join(f"{s * 1000:.1f}" for s in leveret["first"])
        + " ms; RabbitMQ "
        + ", ".join(f"{s * 1000:.1f}" for s in rabbit["first"])
        + " ms.",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores shared with other work, Python "
        f"{platform.python_version()}; run {time.strftime('%Y-%m-%d %H:%M %Z')}; load average "
        f"(1 min) {load}.",
        END_MARK,
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="federation", description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=50_000, help="preloaded per throughput run")
    parser.add_argument("--cap", type=float, default=60, help="most seconds per consumer run")
    parser.add_argument("--idle", type=float, default=10, help="seconds with no consumer")
    parser.add_argument("--rounds", type=int, default=5, help="time-to-first-message rounds")
    parser.add_argument("--write", action="store_true", help="update bench/RESULTS.md")
    args = parser.parse_args(argv)
    settings = Settings(args.messages, args.cap, args.idle, args.rounds)
    before = os.getloadavg()[0]
    with leveret_pair() as pair:
        leveret = measure(pair, settings)
    with rabbitmq_pair() as pair:
        rabbit = measure(pair, settings)
    load = f"{before:.2f} at the start, {os.getloadavg()[0]:.2f} at the end"
    section = report(leveret, rabbit, settings, load)
    print(section)
    if args.write:
        write_section(SECTION, section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
