"""PerfTest-like AMQP load generator: producers and consumers in several processes, one JSON result.

Run `python -m bench.perftest --help` (or `python bench/perftest.py --help`).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import queue as queue_module
import sys
import time
import urllib.parse
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.client import AMQPClosed, Connection, run
from bench.latency import merge_samples, summarise_us
from bench.roles import RoleSettings
from bench.workers import WorkerPlan, worker_main

_NS = 1_000_000_000
_START_MARGIN_S = 0.3  # time for every worker to see the go signal before the first second
_READY_TIMEOUT_S = 60.0
_RESULT_GRACE_S = 60.0
_POLL_S = 1.0  # how often a wait on workers checks that none has died


@dataclass(frozen=True)
class PerfTestConfig:
    uri: str = "amqp://guest:guest@127.0.0.1:5672/"
    producers: int = 1
    consumers: int = 1
    size: int = 12
    queue: str = ""
    exchange: str = ""
    routing_key: str = ""
    durable: bool = False
    persistent: bool = False
    mandatory: bool = False
    confirm: int = 0
    prefetch: int = 0
    auto_ack: bool = False
    multi_ack_every: int = 0
    rate: float = 0.0
    duration: int = 15
    warmup: int = 0
    processes: int = 0  # 0: one per producer and per consumer
    batch: int = 100
    keep_queue: bool = False


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="perftest", add_help=False,
        description="AMQP load generator with RabbitMQ PerfTest's flags where they map.",
    )
    parser.add_argument("--help", action="help", help="show this help and exit")
    parser.add_argument("-h", "--uri", default=PerfTestConfig.uri, help="broker URI")
    parser.add_argument("-x", "--producers", type=int, default=1)
    parser.add_argument("-y", "--consumers", type=int, default=1)
    parser.add_argument("-s", "--size", type=int, default=12,
                        help="message size in bytes (8 or more carries a latency stamp)")
    parser.add_argument("-u", "--queue", default="", help="queue name (default: a fresh one)")
    parser.add_argument("-e", "--exchange", default="", help="exchange (default: the default one)")
    parser.add_argument("-k", "--routing-key", default="",
                        help="routing key (default: the queue name)")
    parser.add_argument("--durable", action="store_true", help="declare the queue durable")
    parser.add_argument("-f", "--flag", action="append", default=[],
                        choices=["persistent", "mandatory"], help="message flags (repeatable)")
    parser.add_argument("-c", "--confirm", type=int, default=0,
                        help="publisher confirms with at most this many unconfirmed (0: off)")
    parser.add_argument("-q", "--qos", type=int, default=0, help="consumer prefetch (0: unset)")
    parser.add_argument("-a", "--autoack", action="store_true", help="consume with auto-ack")
    parser.add_argument("-m", "--multi-ack-every", type=int, default=0,
                        help="ack with multiple=true every N messages (0: ack each one)")
    parser.add_argument("-r", "--rate", type=float, default=0.0,
                        help="publish rate per producer in msg/s (0: as fast as possible)")
    parser.add_argument("-z", "--time", type=int, default=15, help="measured seconds")
    parser.add_argument("--warmup", type=int, default=0,
                        help="seconds run before the measured ones, not counted")
    parser.add_argument("--processes", type=int, default=0,
                        help="worker processes (0: one per producer and per consumer)")
    parser.add_argument("--batch", type=int, default=100, help="most publishes per socket write")
    parser.add_argument("--keep-queue", action="store_true", help="do not delete the queue")
    parser.add_argument("-o", "--output", default="", help="also write the JSON result here")
    return parser


def config_from_args(args: argparse.Namespace) -> PerfTestConfig:
    return PerfTestConfig(
        uri=args.uri, producers=args.producers, consumers=args.consumers, size=args.size,
        queue=args.queue, exchange=args.exchange, routing_key=args.routing_key,
        durable=args.durable, persistent="persistent" in args.flag,
        mandatory="mandatory" in args.flag, confirm=max(args.confirm, 0),
        prefetch=max(args.qos, 0), auto_ack=args.autoack,
        multi_ack_every=max(args.multi_ack_every, 0), rate=max(args.rate, 0.0),
        duration=args.time, warmup=max(args.warmup, 0), processes=max(args.processes, 0),
        batch=max(args.batch, 1), keep_queue=args.keep_queue,
    )


def _redacted(uri: str) -> str:
    parts = urllib.parse.urlsplit(uri)
    netloc = parts.hostname or ""
    if parts.port:
        netloc += f":{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))


async def _prepare_queue(config: PerfTestConfig, queue: str) -> dict[str, Any]:
    connection = await Connection.open(config.uri, "leveret-bench-setup")
    try:
        await connection.queue_declare(queue, durable=config.durable)
        await connection.queue_purge(queue)
        return connection.server_properties
    finally:
        await connection.close()


async def _delete_queue(config: PerfTestConfig, queue: str) -> None:
    connection = await Connection.open(config.uri, "leveret-bench-teardown")
    try:
        await connection.queue_delete(queue)
    finally:
        await connection.close()


def _plans(config: PerfTestConfig, settings: RoleSettings) -> list[WorkerPlan]:
    producers = [("producer", index) for index in range(config.producers)]
    consumers = [("consumer", index) for index in range(config.consumers)]
    # Interleave so that with fewer processes than roles both kinds are spread evenly.
    roles = [role for pair in zip(consumers, producers) for role in pair]
    shorter = min(len(producers), len(consumers))
    roles += consumers[shorter:] + producers[shorter:]
    count = config.processes or len(roles)
    count = max(1, min(count, len(roles)))
    return [
        WorkerPlan(worker=worker, roles=tuple(roles[worker::count]), settings=settings,
                   measure_from_second=config.warmup, ready_timeout=_READY_TIMEOUT_S)
        for worker in range(count)
    ]


def _decode(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def run_perftest(config: PerfTestConfig) -> dict[str, Any]:
    """Run one load test against config.uri and return the result object."""
    if config.producers + config.consumers == 0:
        raise ValueError("nothing to run: no producers and no consumers")
    queue = config.queue or f"leveret-bench-{uuid.uuid4().hex[:8]}"
    seconds = config.warmup + config.duration
    settings = RoleSettings(
        uri=config.uri, queue=queue, exchange=config.exchange,
        routing_key=config.routing_key or queue, size=config.size, persistent=config.persistent,
        mandatory=config.mandatory, confirm_window=config.confirm, rate=config.rate,
        prefetch=config.prefetch, auto_ack=config.auto_ack,
        multi_ack_every=config.multi_ack_every, batch=config.batch, seconds=seconds,
    )
    server_properties = run(_prepare_queue(config, queue))
    try:
        outcome = _run_workers(config, settings)
    finally:
        if not config.keep_queue:
            run(_delete_queue(config, queue))
    return _summarise(config, queue, server_properties, outcome)


def _run_workers(config: PerfTestConfig, settings: RoleSettings) -> dict[str, Any]:
    context = multiprocessing.get_context("spawn")
    ready = context.Queue()
    results = context.Queue()
    go = context.Event()
    start_ns = context.Value("q", 0)
    plans = _plans(config, settings)
    processes = [
        context.Process(target=worker_main, args=(plan, ready, results, go, start_ns),
                        name=f"perftest-worker-{plan.worker}", daemon=True)
        for plan in plans
    ]
    for process in processes:
        process.start()
    try:
        errors = _wait_workers_ready(ready, len(plans), processes)
        if errors:
            raise RuntimeError("workers failed to connect: " + "; ".join(errors))
        start_ns.value = time.monotonic_ns() + int(_START_MARGIN_S * _NS)
        go.set()
        deadline = time.monotonic() + _START_MARGIN_S + settings.seconds + _RESULT_GRACE_S
        collected: list[dict[str, Any]] = []
        while len(collected) < len(plans):
            if time.monotonic() >= deadline:
                raise RuntimeError("workers did not report results in time")
            try:
                collected.append(results.get(timeout=_POLL_S))
            except queue_module.Empty:
                _check_workers_alive(processes)
        return {"workers": collected, "processes": len(plans), "start_ns": start_ns.value}
    finally:
        go.set()  # releases workers still waiting, so they exit
        for process in processes:
            process.join(timeout=10)
            if process.is_alive():
                process.kill()
                process.join(timeout=5)


def _check_workers_alive(processes: list[Any]) -> None:
    crashed = [f"{process.name} (exit {process.exitcode})" for process in processes
               if process.exitcode not in (None, 0)]
    if crashed:
        raise RuntimeError("workers crashed: " + ", ".join(crashed))


def _wait_workers_ready(ready: Any, count: int, processes: list[Any]) -> list[str]:
    deadline = time.monotonic() + _READY_TIMEOUT_S
    errors: list[str] = []
    answered = 0
    while answered < count:
        if time.monotonic() >= deadline:
            return errors + [f"{count - answered} workers did not connect in time"]
        try:
            status, worker, detail = ready.get(timeout=_POLL_S)
        except queue_module.Empty:
            _check_workers_alive(processes)
            continue
        answered += 1
        if status != "ready":
            errors.append(f"worker {worker}: {detail}")
    return errors


def _summarise(
    config: PerfTestConfig, queue: str, server_properties: dict[str, Any], outcome: dict[str, Any],
) -> dict[str, Any]:
    seconds = config.warmup + config.duration
    totals = {name: [0] * seconds for name in ("published", "confirmed", "nacked", "consumed")}
    latency_chunks: list[bytes] = []
    strides: list[int] = []
    errors: list[str] = []
    returned = 0
    cpu_seconds = 0.0
    per_worker = []
    for worker in outcome["workers"]:
        cpu_seconds += worker["cpu_seconds"]
        per_worker.append({
            "roles": [report["role"] for report in worker["reports"]],
            "cpu_cores_used": round(worker["cpu_seconds"] / seconds, 2),
        })
        for report in worker["reports"]:
            for name, counts in totals.items():
                for second, count in enumerate(report[name]):
                    counts[second] += count
            returned += report["returned"]
            if report["latencies"]:
                latency_chunks.append(report["latencies"])
                strides.append(report["latency_stride"])
            if report["error"]:
                errors.append(f"{report['role']}: {report['error']}")
    measured = slice(config.warmup, seconds)

    def rate(name: str) -> float:
        return round(sum(totals[name][measured]) / config.duration, 1)

    parameters = asdict(config)
    parameters["uri"] = _redacted(config.uri)
    parameters["queue"] = queue
    return {
        "broker": {
            "product": _decode(server_properties.get("product", "")),
            "version": _decode(server_properties.get("version", "")),
            "uri": _redacted(config.uri),
        },
        "parameters": parameters,
        "published_msg_s": rate("published"),
        "confirmed_msg_s": rate("confirmed"),
        "nacked_msg_s": rate("nacked"),
        "consumed_msg_s": rate("consumed"),
        "returned": returned,
        "latency_us": summarise_us(merge_samples(latency_chunks)),
        "latency_sampling_stride": max(strides, default=1),
        "per_second": totals,
        # CLOCK_MONOTONIC is shared by all processes of a machine, so others can line up with it.
        "measured_window_monotonic_ns": [
            outcome["start_ns"] + config.warmup * _NS, outcome["start_ns"] + seconds * _NS,
        ],
        "generator": {
            "processes": outcome["processes"],
            "cpu_seconds": round(cpu_seconds, 2),
            # Near the number of cores the generator may use, the generator may be the limit.
            "cpu_cores_used": round(cpu_seconds / seconds, 2),
            "workers": per_worker,
        },
        "errors": errors,
    }


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    config = config_from_args(args)
    try:
        result = run_perftest(config)
    except (OSError, AMQPClosed, RuntimeError) as error:
        print(f"perftest: {type(error).__name__}: {error}", file=sys.stderr)
        return 2
    text = json.dumps(result, indent=2)
    print(text)
    if args.output:
        Path(args.output).write_text(text + "\n")
    return 1 if result["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
