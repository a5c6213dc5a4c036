"""Cross-node messaging on 3-node clusters: Leveret beside RabbitMQ 3.10.8, in one run.

A queue lives on node A. Throughput (1 producer, 1 consumer, 100 B) with the publisher on B
and the consumer on A, then both on B, auto-ack and with confirms plus manual acks (prefetch
100; both on B once more with prefetch 1000, which shows what the consumer's acks crossing to
the home node cost); each paired with the same load on one standalone Leveret node, run right
before or after it (the idle cluster stays up meanwhile), as the baseline, with the cores the
brokers and the whole machine keep busy in each of these runs; latency p50/p99 through one hop
at 1k and 10k msg/s, the two brokers' runs of each setting back to back; and the time from
SIGKILL of the home node until a consumer of its queue on another node hears basic.cancel.
Both clusters run for the whole bench, and each round measures every scenario on each of them
in turn (which goes first alternates), so that the two compare figures taken minutes apart at
most on a machine whose speed drifts; three rounds (--rounds), and the medians are reported.

    .venv/bin/python -m bench.cross_node --write
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pika

from bench.cluster_bench import BenchCluster, rabbitmq_version, wait
from bench.perftest import PerfTestConfig, run_perftest
from bench.procinfo import cpu_seconds, machine_busy_seconds, process_group_pids
from bench.sections import marks, write_section
from tests.support.rabbitmq_cluster import RabbitCluster, start_rabbitmq_cluster

SECTION = "cross_node.py"
START_MARK, END_MARK = marks(SECTION)
QUEUE = "cross-node-bench"

# name -> (perftest settings, where producers and consumers connect: "A" or "B")
Scenario = tuple[dict[str, Any], str, str]
THROUGHPUT: dict[str, Scenario] = {
    "publish B, consume A, auto-ack": ({"auto_ack": True}, "B", "A"),
    "publish B, consume A, confirms + acks": ({"confirm": 1000, "prefetch": 100}, "B", "A"),
    "publish and consume B, auto-ack": ({"auto_ack": True}, "B", "B"),
    "publish and consume B, confirms + acks": ({"confirm": 1000, "prefetch": 100}, "B", "B"),
    # Not a goal of its own: with a window ten times wider, the consumer waits far less often
    # for its acks to reach the home node and free room for the next deliveries.
    "publish and consume B, confirms + acks, prefetch 1000": (
        {"confirm": 1000, "prefetch": 1000},
        "B",
        "B",
    ),
}
LATENCY_RATES = (1000, 10000)
# The machine's speed probe: enough steps to take tens of milliseconds.
_PROBE_STEPS = 300_000
# Where a scenario's name says the clients are ("publish B, consume A, ", ...).
_PLACES = re.compile(r"^publish (?:and consume \w|\w, consume \w), ")


def _perftest(
    urls: dict[str, str],
    settings: dict[str, Any],
    producer: str,
    consumer: str,
    seconds: int,
    **extra: Any,
) -> dict[str, Any]:
    config = PerfTestConfig(
        uri=urls["A"],
        producer_uri=urls[producer],
        consumer_uri=urls[consumer],
        queue=QUEUE,
        size=100,
        duration=seconds,
        warmup=2,
        **settings,
        **extra,
    )
    return run_perftest(config)


# One hop (publish on B), none (on A), and a byte relay in front of A ("R").
LATENCY_PATHS = {"latency": "B", "no hop": "A", "relay": "R"}


def measure_round(
    urls: dict[str, str],
    seconds: int,
    samples: dict[str, list[Any]],
    standalone: str | None,
    standalone_first: bool,
    node_pids: dict[str, list[int]],
) -> None:
    """Every throughput scenario once on the cluster at `urls` (A and B), into `samples`.
    With a `standalone` node, each throughput scenario is paired with a run of its mode there,
    right before or right after it (`standalone_first`), and the pair's ratio kept: this
    machine's speed drifts by half within seconds (`speed ms` samples it after each throughput
    run), and a baseline taken minutes away from its scenario compared one state of the machine
    with another. `node_pids` ("cluster", "standalone"): the brokers' processes, whose cores
    each throughput run records beside the whole machine's."""
    for name, (settings, producer, consumer) in THROUGHPUT.items():
        # Where each run's clients connect, in the order the runs go.
        runs = {"cluster": (urls, producer, consumer)}
        if standalone is not None:
            alone = {"standalone": ({"A": standalone}, "A", "A")}
            runs = {**alone, **runs} if standalone_first else {**runs, **alone}
        rates: dict[str, float] = {}
        cores: dict[str, tuple[float, float]] = {}
        for run, (where, publish_on, consume_on) in runs.items():
            pids = node_pids.get(run, [])
            mark = _cpu_mark(pids)  # (the load generator's start and warm-up included)
            result = _perftest(where, settings, publish_on, consume_on, seconds)
            rates[run], cores[run] = result["consumed_msg_s"], _cores_since(mark, pids)
            samples.setdefault("speed ms", []).append(speed_probe_ms())
        rate = rates["cluster"]
        samples.setdefault(name, []).append(rate)
        samples.setdefault(f"{name} cores", []).append(cores["cluster"])
        if "standalone" in rates:
            alone_rate = rates["standalone"]
            samples.setdefault(f"standalone {_mode(name)}", []).append(alone_rate)
            samples.setdefault(f"{name} standalone cores", []).append(cores["standalone"])
            samples.setdefault(f"{name} to standalone", []).append(rate / max(alone_rate, 1))
            print(f"    standalone node, {_mode(name)}: {alone_rate:.0f} msg/s", flush=True)
        print(f"    {name}: {rate:.0f} msg/s", flush=True)


def measure_latency(
    brokers: list[tuple[str, dict[str, str]]],
    seconds: int,
    samples: dict[str, dict[str, list[Any]]],
) -> None:
    """Every latency run once on each of `brokers` (name, urls), the brokers' runs of one
    setting back to back in the order given: a run minutes away from the one it is compared with
    saw another state of this machine, and the comparison flipped from one bench to the next."""
    for rate in LATENCY_RATES:
        for path, producer in LATENCY_PATHS.items():
            for name, urls in brokers:
                settings = {"auto_ack": True, "rate": float(rate)}
                result = _perftest(urls, settings, producer, "A", seconds)
                latency = result["latency_us"]
                pair = (latency.get("p50"), latency.get("p99"))
                samples[name].setdefault(f"{path} {rate}", []).append(pair)
                print(f"    {name}, {path} at {rate} msg/s: {pair} us", flush=True)


def latency_wins(ours: dict[str, list[Any]], theirs: dict[str, list[Any]]) -> dict[int, Any]:
    """By rate, in how many of the back-to-back pairs of one-hop runs Leveret's p50 and p99 were
    at most RabbitMQ's: (p50 wins, p99 wins, pairs with both figures)."""
    wins: dict[int, Any] = {}
    for rate in LATENCY_RATES:
        key = f"latency {rate}"
        pairs = [
            (mine, other)
            for mine, other in zip(ours[key], theirs[key], strict=True)
            if None not in mine and None not in other
        ]
        wins[rate] = (
            sum(mine[0] <= other[0] for mine, other in pairs),
            sum(mine[1] <= other[1] for mine, other in pairs),
            len(pairs),
        )
    return wins


def summarise(samples: dict[str, list[Any]]) -> dict[str, Any]:
    """The median of each scenario's runs, and their lowest and highest; a scenario's ratio to
    the standalone node is the median of the rounds' ratios."""
    figures: dict[str, Any] = {}
    for name in THROUGHPUT:
        figures[name] = statistics.median(samples[name])
        figures[f"{name} range"] = (min(samples[name]), max(samples[name]))
        for cores in (f"{name} cores", f"{name} standalone cores"):
            if cores in samples:
                figures[cores] = tuple(
                    statistics.median(run[index] for run in samples[cores]) for index in (0, 1)
                )
        if f"{name} to standalone" in samples:
            figures[f"{name} to standalone"] = statistics.median(samples[f"{name} to standalone"])
    if any(key.startswith("standalone ") for key in samples):
        figures["baseline"] = {
            mode: statistics.median(samples[f"standalone {mode}"]) for mode in _modes()
        }
    if "speed ms" in samples:
        speeds = samples["speed ms"]
        figures["speed ms"] = (min(speeds), statistics.median(speeds), max(speeds))
    for rate in LATENCY_RATES:
        for path in LATENCY_PATHS:
            key = f"{path} {rate}"
            pairs = samples[key]
            figures[key] = tuple(_median(pair[index] for pair in pairs) for index in (0, 1))
    return figures


def _median(values: Iterable[float | None]) -> int | None:
    """The median of the values a run gave (a run with too few messages gives None)."""
    known = [value for value in values if value is not None]
    return round(statistics.median(known)) if known else None


@contextlib.contextmanager
def _relay_to(url: str) -> Iterator[str]:
    """`url` through a byte relay of its own process (bench/relay.py)."""
    parts = urllib.parse.urlsplit(url)
    relay = subprocess.Popen(
        [sys.executable, "-m", "bench.relay", str(parts.port)],
        stdout=subprocess.PIPE,
        cwd=Path(__file__).resolve().parent.parent,
    )
    try:
        assert relay.stdout is not None
        port = int(relay.stdout.readline())
        yield urllib.parse.urlunsplit(
            parts._replace(netloc=f"{parts.netloc.rsplit(':', 1)[0]}:{port}")
        )
    finally:
        relay.kill()
        relay.wait()


def cancel_seconds(consumer_url: str, declare_url: str, kill: Callable[[], None]) -> float:
    """Seconds from SIGKILL of the queue's home node to basic.cancel on another node."""
    with pika.BlockingConnection(pika.URLParameters(declare_url)) as conn:
        conn.channel().queue_declare("cancel-probe", durable=True)
    parameters = pika.URLParameters(consumer_url)
    parameters.client_properties = {"capabilities": {"consumer_cancel_notify": True}}
    cancelled: list[float] = []
    conn = pika.BlockingConnection(parameters)
    channel = conn.channel()
    channel.add_on_cancel_callback(lambda _frame: cancelled.append(time.monotonic()))
    wait(lambda: _consumed(channel, conn), 10, 0.05)
    killed = time.monotonic()
    kill()
    deadline = killed + 60
    while not cancelled and time.monotonic() < deadline:
        conn.process_data_events(0.01)
    conn.close()
    return cancelled[0] - killed if cancelled else float("inf")


def _consumed(channel: Any, conn: pika.BlockingConnection) -> bool:
    try:
        channel.basic_consume("cancel-probe", lambda *_: None)
    except pika.exceptions.ChannelClosedByBroker:
        return False
    conn.process_data_events(0.2)
    return True


def _mode(scenario: str) -> str:
    """What a scenario compares with on a single node: what its name says after the clients'
    places ("auto-ack", "confirms + acks", ...)."""
    return _PLACES.sub("", scenario)


def _modes() -> dict[str, dict[str, Any]]:
    """Each mode once, with its perftest settings."""
    modes: dict[str, dict[str, Any]] = {}
    for name, (settings, _, _) in THROUGHPUT.items():
        modes.setdefault(_mode(name), settings)
    return modes


def speed_probe_ms() -> float:
    """The CPU milliseconds this process takes for a fixed piece of pure-Python work: how fast
    the machine runs Python at the moment."""
    started = time.process_time()
    counts: dict[int, int] = {}
    for number in range(_PROBE_STEPS):
        counts[number & 1023] = counts.get(number & 1023, 0) + number
    return (time.process_time() - started) * 1000


def _cpu_mark(pids: list[int]) -> tuple[float, float, float]:
    """Now, and the CPU seconds `pids` and the whole machine have used so far."""
    return time.monotonic(), cpu_seconds(pids), machine_busy_seconds()


def _cores_since(mark: tuple[float, float, float], pids: list[int]) -> tuple[float, float]:
    """The cores `pids` and the whole machine kept busy on average since `mark`."""
    started, nodes_before, machine_before = mark
    elapsed = max(time.monotonic() - started, 1e-9)
    return (
        (cpu_seconds(pids) - nodes_before) / elapsed,
        (machine_busy_seconds() - machine_before) / elapsed,
    )


def _idle_cores(pids: list[int], seconds: float = 5.0) -> float:
    """The cores the processes use while nothing is asked of them."""
    mark = _cpu_mark(pids)
    time.sleep(seconds)
    return _cores_since(mark, pids)[0]


def paired_run(seconds: int, rounds: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """Leveret (3 nodes, and a standalone node) and RabbitMQ (3 nodes) up together, measured
    in the same rounds; then, on each cluster, the cancel after SIGKILL of the home node."""
    print("Leveret (3 nodes and a standalone node) and RabbitMQ (3 nodes), same rounds", flush=True)
    single = BenchCluster(1)
    cluster: BenchCluster | None = None
    rabbit: RabbitCluster | None = None
    try:
        single.nodes[0].start()
        cluster = BenchCluster(3).form()
        rabbit = start_rabbitmq_cluster(3)
        ours = {"A": cluster.nodes[0].amqp_url, "B": cluster.nodes[1].amqp_url}
        theirs = {"A": rabbit.nodes[0].url, "B": rabbit.nodes[1].url}
        our_pids = {
            "cluster": [node.proc.pid for node in cluster.nodes if node.proc is not None],
            "standalone": [single.nodes[0].proc.pid] if single.nodes[0].proc else [],
        }
        their_pids = {
            "cluster": [pid for node in rabbit.nodes for pid in process_group_pids(node.pid)]
        }
        idle = _idle_cores(our_pids["cluster"] + their_pids["cluster"])
        samples: dict[str, dict[str, list[Any]]] = {"Leveret": {}, "RabbitMQ": {}}
        with _relay_to(ours["A"]) as our_relay, _relay_to(theirs["A"]) as their_relay:
            brokers = [
                ("Leveret", {**ours, "R": our_relay}, single.nodes[0].amqp_url, our_pids),
                ("RabbitMQ", {**theirs, "R": their_relay}, None, their_pids),
            ]
            for number in range(1, rounds + 1):
                print(f"  round {number} of {rounds}", flush=True)
                in_turn = brokers if number % 2 else brokers[::-1]
                for name, urls, standalone, pids in in_turn:
                    print(f"   {name}", flush=True)
                    measure_round(urls, seconds, samples[name], standalone, number % 2 == 1, pids)
                measure_latency([(name, urls) for name, urls, _, _ in in_turn], seconds, samples)
        leveret, rabbitmq = summarise(samples["Leveret"]), summarise(samples["RabbitMQ"])
        leveret["latency wins"] = latency_wins(samples["Leveret"], samples["RabbitMQ"])
        leveret["idle clusters cores"] = idle
        leveret["cancel"] = cancel_seconds(ours["B"], ours["A"], cluster.nodes[0].kill)
        rabbit_home = rabbit.nodes[0]
        rabbitmq["cancel"] = cancel_seconds(
            theirs["B"], theirs["A"], lambda: os.killpg(rabbit_home.pid, signal.SIGKILL)
        )
        return leveret, rabbitmq
    finally:
        if rabbit is not None:
            rabbit.stop()
        if cluster is not None:
            cluster.stop()
        single.stop()


def report(leveret: dict[str, Any], rabbit: dict[str, Any], seconds: int, rounds: int) -> str:
    lines = [
        START_MARK,
        "## Cross-node messaging, 3-node clusters (bench/cross_node.py)",
        "",
        f"Queue on node A; 1 producer, 1 consumer, 100 B, transient, {seconds} s measured after "
        f"2 s warm-up; loopback on one machine ({platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}); RabbitMQ {rabbitmq_version()} as a 3-node "
        "cluster started the same way. Load from bench/perftest.py. Both clusters run "
        "for the whole bench, and each round measures every scenario on one, then on the "
        "other (which goes first alternates), so that the machine's drift falls on both alike; "
        f"the idle clusters use {leveret['idle clusters cores']:.3f} cores together. Every "
        f"figure is the median of {rounds} runs, one per round; the lowest and highest of the "
        "runs are in brackets.",
        "",
        "| scenario | Leveret msg/s | RabbitMQ msg/s | Leveret / RabbitMQ "
        "| Leveret / its single node |",
        "| --- | --- | --- | --- | --- |",
    ]
    baseline = leveret["baseline"]
    for name in THROUGHPUT:
        ours, theirs = leveret[name], rabbit[name]
        single = f"{leveret[f'{name} to standalone']:.2f}x"
        lines.append(
            f"| {name} | {ours:,.0f} {_range(leveret, name)} | {theirs:,.0f} "
            f"{_range(rabbit, name)} | {ours / max(theirs, 1):.2f}x | {single} |"
        )
    lines += [
        "",
        "Standalone Leveret node (same load, producer and consumer on it, the idle clusters "
        "beside it), run right before each scenario's run on the cluster in one round and "
        "right after it in the next: "
        + "; ".join(f"{mode}: {value:,.0f} msg/s" for mode, value in baseline.items())
        + f" (medians). A scenario's ratio to it is the median of the {rounds} pairs' ratios. "
        "Pairs because the machine's speed drifts within seconds: a fixed piece of pure-Python "
        "work, timed after every throughput run, took {:.0f} / {:.0f} / {:.0f} ms of CPU "
        "(lowest / median / highest).".format(*_speeds(leveret, rabbit)),
        "",
        f"Cores busy during the throughput runs, on average over each run (its start and "
        f"warm-up included), as the brokers' processes / the whole machine of {os.cpu_count()} "
        "cores (medians):",
        "",
        "| scenario | Leveret cluster | its single node | RabbitMQ cluster |",
        "| --- | --- | --- | --- |",
        *(
            f"| {name} | {_cores(leveret, f'{name} cores')} "
            f"| {_cores(leveret, f'{name} standalone cores')} "
            f"| {_cores(rabbit, f'{name} cores')} |"
            for name in THROUGHPUT
        ),
        "",
        "| latency through one hop (publish B, consume A) | Leveret p50 / p99 µs "
        "| RabbitMQ p50 / p99 µs | pairs where Leveret's was lower or equal, p50 / p99 |",
        "| --- | --- | --- | --- |",
    ]
    for rate in LATENCY_RATES:
        ours, theirs = leveret[f"latency {rate}"], rabbit[f"latency {rate}"]
        p50_wins, p99_wins, pairs = leveret.get("latency wins", {}).get(rate, (0, 0, 0))
        lines.append(
            f"| {rate:,} msg/s | {ours[0]} / {ours[1]} | {theirs[0]} / {theirs[1]} "
            f"| {p50_wins} / {p99_wins} of {pairs} |"
        )
    lines += [
        "",
        "What the hop is made of, at the same rates: publish and consume both on A (no hop), "
        "and publish through a byte relay (bench/relay.py, a Python process with uvloop that "
        "only reads and writes) in front of A: the least a second Python process in the path "
        "costs.",
        "",
        "| p50 / p99 µs | Leveret, no hop | Leveret, through the relay | RabbitMQ, no hop "
        "| RabbitMQ, through the relay |",
        "| --- | --- | --- | --- | --- |",
    ]
    for rate in LATENCY_RATES:
        cells = [
            f"{figures[f'{path} {rate}'][0]} / {figures[f'{path} {rate}'][1]}"
            for figures in (leveret, rabbit)
            for path in ("no hop", "relay")
        ]
        lines.append(f"| {rate:,} msg/s | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Latency runs are auto-ack; the producer sleeps until each message is due (it does not "
        "spin a core) and the consumer reads the clock once per socket read. In each round the "
        "two brokers' runs of one setting go back to back, alternating which goes first, and "
        "the figures are the medians of the rounds.",
        "",
        "Time from SIGKILL of the home node until a consumer of its queue on another node gets "
        f"basic.cancel: Leveret {_seconds(leveret['cancel'])}, RabbitMQ "
        f"{_seconds(rabbit['cancel'])}.",
        END_MARK,
    ]
    return "\n".join(lines)


def _speeds(*figures: dict[str, Any]) -> tuple[float, float, float]:
    """The speed probe's lowest, median and highest over both brokers' rounds."""
    lows, medians, highs = zip(*(each["speed ms"] for each in figures), strict=True)
    return min(lows), statistics.median(medians), max(highs)


def _cores(figures: dict[str, Any], key: str) -> str:
    if key not in figures:
        return ""
    nodes, machine = figures[key]
    return f"{nodes:.2f} / {machine:.2f}"


def _range(figures: dict[str, Any], name: str) -> str:
    low, high = figures[f"{name} range"]
    return f"({low / 1000:,.1f}k-{high / 1000:,.1f}k)"


def _seconds(value: float) -> str:
    return f"{value:.2f} s" if value != float("inf") else "none within 60 s"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="cross_node", description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=int, default=8, help="measured seconds per run")
    parser.add_argument(
        "--rounds", type=int, default=3, help="runs of every scenario; the median is reported"
    )
    parser.add_argument("--write", action="store_true", help="update bench/RESULTS.md")
    args = parser.parse_args(argv)
    leveret, rabbit = paired_run(args.seconds, args.rounds)
    section = report(leveret, rabbit, args.seconds, args.rounds)
    print(section)
    if args.write:
        write_section(SECTION, section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
