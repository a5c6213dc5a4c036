"""AMQP over TLS: Leveret's AMQPS beside its plain AMQP and RabbitMQ's AMQPS, in one run.

Each broker (one at a time) pinned to core 0, the generator to core 1; the same certificate (an
ECDSA P-256 key made for the run) on both brokers, TLS 1.3, the server checked by the client
against the run's CA. Scenarios: 1 producer and 1 consumer, one queue, transient messages of
100 B and 4 KiB, publisher confirms (at most 1000 unconfirmed), manual ack with prefetch 100.
On a machine shared with other work the rate of one run says little, so the plain and the TLS
run of each size alternate for several rounds and the median of each is reported. Writes its
section of bench/RESULTS.md with --write.

    .venv/bin/python -m bench.tls --write
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.brokers import (
    BrokerUnderTest,
    default_leveret_command,
    running_leveret,
    running_rabbitmq,
)
from bench.generator import run_generator
from bench.procinfo import UsageSampler
from bench.sections import marks, write_section
from tests.support.certs import Authority
from tests.support.rabbitmq import _reserve_ports

SECTION = "tls.py"
START_MARK, END_MARK = marks(SECTION)
SIZES = (100, 4096)
BROKER_CPU, GENERATOR_CPU = 0, 1


def scenario_args(size: int) -> tuple[str, ...]:
    return ("-x", "1", "-y", "1", "-s", str(size), "--qos", "100", "--confirm", "1000")


@dataclass(frozen=True)
class Figure:
    target: str  # "Leveret AMQP", "Leveret AMQPS", "RabbitMQ AMQPS", ...
    size: int
    consumed_msg_s: float
    confirmed_msg_s: float
    broker_cores: float | None


def amqps_url(port: int, ca: str) -> str:
    query = urllib.parse.urlencode({"cacertfile": ca, "server_name_indication": "localhost"})
    return f"amqps://guest:guest@127.0.0.1:{port}/?{query}"


def measure(
    broker: BrokerUnderTest, target: str, url: str, size: int, seconds: int, warmup: int
) -> Figure:
    with UsageSampler(broker.process_group) as sampler:
        result = run_generator(url, scenario_args(size), seconds, warmup, GENERATOR_CPU)
    start_ns, end_ns = result["measured_window_monotonic_ns"]
    cores = sampler.cores_used(start_ns, end_ns)
    figure = Figure(
        target,
        size,
        float(result["consumed_msg_s"]),
        float(result["confirmed_msg_s"]),
        round(cores, 2) if cores is not None else None,
    )
    print(
        f"{target} {size} B: {figure.consumed_msg_s:,.0f} msg/s consumed, "
        f"{figure.confirmed_msg_s:,.0f} confirmed, broker {figure.broker_cores} cores",
        flush=True,
    )
    return figure


@contextmanager
def certificates() -> Iterator[tuple[Authority, Any]]:
    with tempfile.TemporaryDirectory(prefix="leveret-bench-tls-") as directory:
        authority = Authority(Path(directory))
        yield authority, authority.server("bench-server")


def alternate(
    broker: BrokerUnderTest, targets: list[tuple[str, str]], timing: tuple[int, int, int]
) -> list[Figure]:
    """Each (target, url) at each size, alternating for `rounds`; one median Figure each."""
    seconds, warmup, rounds = timing
    figures = []
    for size in SIZES:
        runs: dict[str, list[Figure]] = {target: [] for target, _ in targets}
        for _ in range(rounds):
            for target, url in targets:
                runs[target].append(measure(broker, target, url, size, seconds, warmup))
        for target, measured in runs.items():
            cores = [f.broker_cores for f in measured if f.broker_cores is not None]
            figures.append(
                Figure(
                    target,
                    size,
                    statistics.median(f.consumed_msg_s for f in measured),
                    statistics.median(f.confirmed_msg_s for f in measured),
                    round(statistics.median(cores), 2) if cores else None,
                )
            )
    return figures


def leveret_figures(
    authority: Authority, server: Any, timing: tuple[int, int, int]
) -> list[Figure]:
    config = Path(authority.directory) / "leveret.toml"
    config.write_text(
        f'[ssl_options]\ncertfile = "{server.certfile}"\nkeyfile = "{server.keyfile}"\n'
        'versions = ["tlsv1.3"]\n'
    )
    command = [*default_leveret_command(), "--config", str(config), "--amqps-port", "0"]
    with running_leveret(BROKER_CPU, command) as broker:
        ports: dict[str, int] = broker.ports  # type: ignore[attr-defined]
        url = amqps_url(ports["amqps"], authority.certfile)
        return alternate(broker, [("Leveret AMQP", broker.url), ("Leveret AMQPS", url)], timing)


def rabbitmq_figures(
    authority: Authority, server: Any, timing: tuple[int, int, int]
) -> list[Figure]:
    [port] = _reserve_ports(1)
    config = [
        f"listeners.ssl.default = {port}",
        f"ssl_options.certfile = {server.certfile}",
        f"ssl_options.keyfile = {server.keyfile}",
        "ssl_options.versions.1 = tlsv1.3",
    ]
    with running_rabbitmq(BROKER_CPU, extra_config=config) as broker:
        url = amqps_url(port, authority.certfile)
        return alternate(broker, [("RabbitMQ AMQP", broker.url), ("RabbitMQ AMQPS", url)], timing)


def report(figures: list[Figure], seconds: int, rounds: int, load: str) -> str:
    by = {(figure.target, figure.size): figure for figure in figures}
    lines = [
        START_MARK,
        "## AMQP over TLS (`make bench-tls`)",
        "",
        "1 producer, 1 consumer, one queue, transient messages, publisher confirms (at most 1000 "
        "unconfirmed), manual ack with prefetch 100; TLS 1.3 (TLS_AES_256_GCM_SHA384 as "
        "negotiated by both), an ECDSA P-256 server certificate checked by the client; each "
        f"broker pinned to core 0, the generator to core 1; {seconds} s measured per run, plain "
        f"and TLS runs alternating, the median of {rounds} each. msg/s consumed (broker cores "
        "used).",
        "",
        "| size | Leveret AMQP | Leveret AMQPS | RabbitMQ AMQP | RabbitMQ AMQPS | "
        "AMQPS / RabbitMQ's AMQPS | AMQPS / Leveret AMQP |",
        "| --: | --: | --: | --: | --: | --: | --: |",
    ]
    for size in SIZES:
        cells = []
        for target in ("Leveret AMQP", "Leveret AMQPS", "RabbitMQ AMQP", "RabbitMQ AMQPS"):
            figure = by.get((target, size))
            cells.append(
                f"{figure.consumed_msg_s / 1000:.1f}k ({figure.broker_cores})" if figure else "n/a"
            )
        tls, plain, rabbit = (
            by.get(("Leveret AMQPS", size)),
            by.get(("Leveret AMQP", size)),
            by.get(("RabbitMQ AMQPS", size)),
        )
        versus_rabbit = (
            f"{tls.consumed_msg_s / rabbit.consumed_msg_s:.2f}x" if tls and rabbit else "n/a"
        )
        versus_plain = (
            f"{tls.consumed_msg_s / plain.consumed_msg_s:.2f}x" if tls and plain else "n/a"
        )
        label = "4 KiB" if size == 4096 else f"{size} B"
        lines.append(f"| {label} | {' | '.join(cells)} | {versus_rabbit} | {versus_plain} |")
    lines += [
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores shared with other work, Python "
        f"{platform.python_version()}; run {time.strftime('%Y-%m-%d %H:%M %Z')}; load average "
        f"(1 min) {load}.",
        END_MARK,
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tls", description=__doc__.split("\n")[0])
    parser.add_argument("--duration", type=int, default=15, help="measured seconds per run")
    parser.add_argument("--warmup", type=int, default=3, help="unmeasured seconds before them")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each, alternating")
    parser.add_argument("--only", choices=("leveret", "rabbitmq"), help="one broker only")
    parser.add_argument("--write", action="store_true", help="update bench/RESULTS.md")
    args = parser.parse_args(argv)
    before = os.getloadavg()[0]
    figures: list[Figure] = []
    timing = (args.duration, args.warmup, max(args.rounds, 1))
    with certificates() as (authority, server):
        if args.only != "rabbitmq":
            figures += leveret_figures(authority, server, timing)
        if args.only != "leveret":
            figures += rabbitmq_figures(authority, server, timing)
    load = f"{before:.2f} at the start, {os.getloadavg()[0]:.2f} at the end"
    section = report(figures, args.duration, timing[2], load)
    print(section)
    if args.write:
        write_section(SECTION, section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
