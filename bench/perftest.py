"""PerfTest-like AMQP load generator: producers and consumers in several processes, one JSON result.

Run `python -m bench.perftest --help` (or `python bench/perftest.py --help`).
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import queue as queue_module
import sys
import time
import urllib.parse
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import topology
from bench.client import AMQPClosed, run
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
    producer_uri: str = ""  # "": uri
    consumer_uri: str = ""  # "": uri
    producers: int = 1
    consumers: int = 1
    size: int = 12
    queue: str = ""
    queue_pattern: str = ""  # e.g. "q-%d": one queue per number of the range below
    queue_pattern_from: int = 1
    queue_pattern_to: int = 1
    queue_args: dict[str, int | str] = field(default_factory=dict)
    exchange: str = ""
    exchange_type: str = ""  # declare the exchange with this type ("": do not declare it)
    routing_key: str = ""
    durable: bool = False
    persistent: bool = False
    mandatory: bool = False
    confirm: int = 0
    prefetch: int = 0
    auto_ack: bool = False
    multi_ack_every: int = 0
    rate: float = 0.0
    random_priority: int | None = None
    producer_messages: int = 0  # per producer; 0: no limit
    duration: int = 15
    warmup: int = 0
    processes: int = 0  # 0: one per producer and per consumer
    batch: int = 100
    keep_queue: bool = False


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="perftest",
        add_help=False,
        description="AMQP load generator with RabbitMQ PerfTest's flags where they map.",
    )
    parser.add_argument("--help", action="help", help="show this help and exit")
    parser.add_argument("-h", "--uri", default=PerfTestConfig.uri, help="broker URI")
    parser.add_argument(
        "--producer-uri", default="", help="producers connect here (default: --uri)"
    )
    parser.add_argument(
        "--consumer-uri", default="", help="consumers connect here (default: --uri)"
    )
    parser.add_argument("-x", "--producers", type=int, default=1)
    parser.add_argument("-y", "--consumers", type=int, default=1)
    parser.add_argument(
        "-s",
        "--size",
        type=int,
        default=12,
        help="message size in bytes (8 or more carries a latency stamp)",
    )
    parser.add_argument("-u", "--queue", default="", help="queue name (default: a fresh one)")
    parser.add_argument(
        "--queue-pattern",
        default="",
        help="several queues, e.g. 'q-%%d' (consumers spread over them)",
    )
    parser.add_argument("--queue-pattern-from", type=int, default=1)
    parser.add_argument("--queue-pattern-to", type=int, default=1)
    parser.add_argument(
        "--queue-args",
        default="",
        help="queue arguments, e.g. x-max-length=1000,x-overflow=drop-head",
    )
    parser.add_argument("-e", "--exchange", default="", help="exchange (default: the default one)")
    parser.add_argument(
        "-t",
        "--type",
        default="",
        help="declare the exchange with this type (direct, fanout, topic, ...)",
    )
    parser.add_argument(
        "-k", "--routing-key", default="", help="routing key (default: the queue name)"
    )
    parser.add_argument("--durable", action="store_true", help="declare the queue durable")
    parser.add_argument(
        "-f",
        "--flag",
        action="append",
        default=[],
        choices=["persistent", "mandatory"],
        help="message flags (repeatable)",
    )
    parser.add_argument(
        "-c",
        "--confirm",
        type=int,
        default=0,
        help="publisher confirms with at most this many unconfirmed (0: off)",
    )
    parser.add_argument("-q", "--qos", type=int, default=0, help="consumer prefetch (0: unset)")
    parser.add_argument("-a", "--autoack", action="store_true", help="consume with auto-ack")
    parser.add_argument(
        "-m",
        "--multi-ack-every",
        type=int,
        default=0,
        help="ack with multiple=true every N messages (0: ack each one)",
    )
    parser.add_argument(
        "-r",
        "--rate",
        type=float,
        default=0.0,
        help="publish rate per producer in msg/s (0: as fast as possible)",
    )
    parser.add_argument(
        "--random-priority",
        type=int,
        default=None,
        metavar="MAX",
        help="give each message a priority drawn uniformly from 0..MAX",
    )
    parser.add_argument(
        "-C",
        "--pmessages",
        type=int,
        default=0,
        help="messages per producer, then wait for their confirms and stop",
    )
    parser.add_argument("-z", "--time", type=int, default=15, help="measured seconds")
    parser.add_argument(
        "--warmup", type=int, default=0, help="seconds run before the measured ones, not counted"
    )
    parser.add_argument(
        "--processes",
        type=int,
        default=0,
        help="worker processes (0: one per producer and per consumer)",
    )
    parser.add_argument("--batch", type=int, default=100, help="most publishes per socket write")
    parser.add_argument("--keep-queue", action="store_true", help="do not delete the queue")
    parser.add_argument("-o", "--output", default="", help="also write the JSON result here")
    return parser


def config_from_args(args: argparse.Namespace) -> PerfTestConfig:
    if args.random_priority is not None and not 0 <= args.random_priority <= 255:
        raise ValueError("--random-priority must be within 0..255")
    return PerfTestConfig(
        uri=args.uri,
        producer_uri=args.producer_uri,
        consumer_uri=args.consumer_uri,
        producers=args.producers,
        consumers=args.consumers,
        size=args.size,
        queue=args.queue,
        queue_pattern=args.queue_pattern,
        queue_pattern_from=args.queue_pattern_from,
        queue_pattern_to=args.queue_pattern_to,
        queue_args=topology.parse_queue_arguments(args.queue_args),
        exchange=args.exchange,
        exchange_type=args.type,
        routing_key=args.routing_key,
        durable=args.durable,
        persistent="persistent" in args.flag,
        mandatory="mandatory" in args.flag,
        confirm=max(args.confirm, 0),
        prefetch=max(args.qos, 0),
        auto_ack=args.autoack,
        multi_ack_every=max(args.multi_ack_every, 0),
        rate=max(args.rate, 0.0),
        random_priority=args.random_priority,
        producer_messages=max(args.pmessages, 0),
        duration=args.time,
        warmup=max(args.warmup, 0),
        processes=max(args.processes, 0),
        batch=max(args.batch, 1),
        keep_queue=args.keep_queue,
    )


def _redacted(uri: str) -> str:
    parts = urllib.parse.urlsplit(uri)
    netloc = parts.hostname or ""
    if parts.port:
        netloc += f":{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _topology(config: PerfTestConfig) -> topology.Topology:
    queue = config.queue or f"leveret-bench-{uuid.uuid4().hex[:8]}"
    queues = topology.queue_names(
        queue, config.queue_pattern, config.queue_pattern_from, config.queue_pattern_to
    )
    return topology.Topology(
        queues=queues,
        exchange=config.exchange,
        exchange_type=config.exchange_type,
        routing_key=config.routing_key or queues[0],
        durable=config.durable,
        queue_arguments=config.queue_args,
    )


def _plans(config: PerfTestConfig, settings: RoleSettings) -> list[WorkerPlan]:
    producers = [("producer", index) for index in range(config.producers)]
    consumers = [("consumer", index) for index in range(config.consumers)]
    # Interleave so that with fewer processes than roles both kinds are spread evenly.
    roles = [role for pair in zip(consumers, producers, strict=False) for role in pair]
    shorter = min(len(producers), len(consumers))
    roles += consumers[shorter:] + producers[shorter:]
    count = config.processes or len(roles)
    count = max(1, min(count, len(roles)))
    return [
        WorkerPlan(
            worker=worker,
            roles=tuple(roles[worker::count]),
            settings=settings,
            measure_from_second=config.warmup,
            ready_timeout=_READY_TIMEOUT_S,
        )
        for worker in range(count)
    ]


def _decode(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def run_perftest(config: PerfTestConfig) -> dict[str, Any]:
    """Run one load test against config.uri and return the result object."""
    if config.producers + config.consumers == 0:
        raise ValueError("nothing to run: no producers and no consumers")
    target = _topology(config)
    seconds = config.warmup + config.duration
    settings = RoleSettings(
        uri=config.uri,
        queues=target.queues,
        exchange=config.exchange,
        routing_key=target.routing_key,
        size=config.size,
        persistent=config.persistent,
        mandatory=config.mandatory,
        confirm_window=config.confirm,
        rate=config.rate,
        prefetch=config.prefetch,
        auto_ack=config.auto_ack,
        multi_ack_every=config.multi_ack_every,
        batch=config.batch,
        seconds=seconds,
        random_priority=config.random_priority,
        max_messages=config.producer_messages,
        producer_uri=config.producer_uri,
        consumer_uri=config.consumer_uri,
    )
    server_properties = run(topology.declare(config.uri, target))
    try:
        outcome = _run_workers(config, settings)
    finally:
        if not config.keep_queue:
            run(topology.delete(config.uri, target))
    return _summarise(config, target, server_properties, outcome)


def _run_workers(config: PerfTestConfig, settings: RoleSettings) -> dict[str, Any]:
    context = multiprocessing.get_context("spawn")
    ready = context.Queue()
    results = context.Queue()
    go = context.Event()
    start_ns = context.Value("q", 0)
    plans = _plans(config, settings)
    processes = [
        context.Process(
            target=worker_main,
            args=(plan, ready, results, go, start_ns),
            name=f"perftest-worker-{plan.worker}",
            daemon=True,
        )
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
    crashed = [
        f"{process.name} (exit {process.exitcode})"
        for process in processes
        if process.exitcode not in (None, 0)
    ]
    if crashed:
        raise RuntimeError("workers crashed: " + ", ".join(crashed))


def _wait_workers_ready(ready: Any, count: int, processes: list[Any]) -> list[str]:
    deadline = time.monotonic() + _READY_TIMEOUT_S
    errors: list[str] = []
    answered = 0
    while answered < count:
        if time.monotonic() >= deadline:
            return [*errors, f"{count - answered} workers did not connect in time"]
        try:
            status, worker, detail = ready.get(timeout=_POLL_S)
        except queue_module.Empty:
            _check_workers_alive(processes)
            continue
        answered += 1
        if status != "ready":
            errors.append(f"worker {worker}: {detail}")
    return errors


def _run_end_ns(config: PerfTestConfig, outcome: dict[str, Any]) -> int:
    """When the run ended: at its time limit, or earlier once every role had stopped (-C)."""
    planned = outcome["start_ns"] + (config.warmup + config.duration) * _NS
    ended = [report["ended_ns"] for worker in outcome["workers"] for report in worker["reports"]]
    if ended and all(ended):
        return min(max(ended), planned)
    return planned


def _summarise(
    config: PerfTestConfig,
    target: topology.Topology,
    server_properties: dict[str, Any],
    outcome: dict[str, Any],
) -> dict[str, Any]:
    seconds = config.warmup + config.duration
    start_ns = outcome["start_ns"]
    end_ns = _run_end_ns(config, outcome)
    run_s = max((end_ns - start_ns) / _NS, 1e-3)
    measured_s = max((end_ns - start_ns) / _NS - config.warmup, 1e-3)
    totals = {name: [0] * seconds for name in ("published", "confirmed", "nacked", "consumed")}
    latency_chunks: list[bytes] = []
    strides: list[int] = []
    errors: list[str] = []
    returned = 0
    cpu_seconds = 0.0
    per_worker = []
    for worker in outcome["workers"]:
        cpu_seconds += worker["cpu_seconds"]
        per_worker.append(
            {
                "roles": [report["role"] for report in worker["reports"]],
                "cpu_cores_used": round(worker["cpu_seconds"] / run_s, 2),
            }
        )
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
        return round(sum(totals[name][measured]) / measured_s, 1)

    parameters = asdict(config)
    parameters["uri"] = _redacted(config.uri)
    parameters["queue"] = target.queues[0]
    parameters["queues"] = list(target.queues)
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
        # Cut at the run's real end: a run ended by -C leaves the rest of -z empty.
        "per_second": {name: counts[: math.ceil(run_s)] for name, counts in totals.items()},
        # CLOCK_MONOTONIC is shared by all processes of a machine, so others can line up with it.
        "measured_window_monotonic_ns": [start_ns + config.warmup * _NS, end_ns],
        "measured_s": round(measured_s, 3),
        "generator": {
            "processes": outcome["processes"],
            "cpu_seconds": round(cpu_seconds, 2),
            # Near the number of cores the generator may use, the generator may be the limit.
            "cpu_cores_used": round(cpu_seconds / run_s, 2),
            "workers": per_worker,
        },
        "errors": errors,
    }


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        config = config_from_args(args)
    except ValueError as error:
        parser.error(str(error))
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
