"""Measure RabbitMQ and Leveret on this machine, one at a time, and update bench/RESULTS.md.

Run `python -m bench.side_by_side --help` (or `python bench/side_by_side.py --help`).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shlex
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bench` and `tests` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.backlog import measure_backlog
from bench.brokers import (
    BrokerUnderTest,
    default_leveret_command,
    erlang_otp_release,
    running_leveret,
    running_rabbitmq,
)
from bench.generator import run_generator
from bench.procinfo import (
    UsageSampler,
    lifetime_peak_rss_kib,
    process_group_pids,
    wait_machine_quiet,
)
from bench.report import (
    describe_entry,
    keep_foreign_sections,
    load_results,
    other_cpu,
    perftest_result,
    render_markdown,
    save_results,
    store_run,
)
from bench.scenarios import BACKLOG, Scenario, find_scenarios

BENCH_DIR = Path(__file__).resolve().parent


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only",
        choices=["rabbitmq", "leveret"],
        help="measure one broker; the other's stored figures are kept",
    )
    parser.add_argument(
        "--scenario",
        action="append",
        default=[],
        help="run only this scenario (repeatable; default: all)",
    )
    parser.add_argument("--duration", type=int, default=15, help="measured seconds per scenario")
    parser.add_argument("--warmup", type=int, default=3, help="unmeasured seconds before them")
    parser.add_argument("--broker-cpu", type=int, default=0, help="core the broker is pinned to")
    parser.add_argument(
        "--generator-cpu", type=int, default=1, help="core the load generator is pinned to"
    )
    parser.add_argument(
        "--leveret-command",
        default=shlex.join(default_leveret_command()),
        help="how to start a Leveret node (server flags are appended)",
    )
    parser.add_argument("--results", type=Path, default=BENCH_DIR / "results.json")
    parser.add_argument("--markdown", type=Path, default=BENCH_DIR / "RESULTS.md")
    parser.add_argument("--note", default="", help="a remark stored with this run")
    parser.add_argument(
        "--attempts",
        type=int,
        default=1,
        help="most runs of a scenario while its other CPU stays above "
        "--max-other-cpu; the quietest run is kept",
    )
    parser.add_argument(
        "--max-other-cpu",
        type=float,
        default=0.25,
        help="other CPU (cores) above which a run counts as disturbed",
    )
    parser.add_argument(
        "--quiet-wait",
        type=float,
        default=0.0,
        help="before each run, wait up to this many seconds for the machine's "
        "busy cores to fall to --max-other-cpu",
    )
    return parser


def machine_info() -> dict[str, Any]:
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory_gib = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    return {
        "cpu_model": model,
        "cpu_count": os.cpu_count(),
        "memory_gib": memory_gib,
        "kernel": platform.release(),
        "python": platform.python_version(),
    }


def _per_message(bytes_per_second: float | None, result: dict[str, Any]) -> int | None:
    """Disk bytes per message published: per message confirmed when confirms are on."""
    rate = (
        result["confirmed_msg_s"] if result["parameters"]["confirm"] else result["published_msg_s"]
    )
    if bytes_per_second is None or not rate:
        return None
    return round(bytes_per_second / rate)


def measure_scenario(
    broker: BrokerUnderTest,
    scenario: Scenario,
    duration: int,
    warmup: int,
    generator_cpu: int | None,
) -> dict[str, Any]:
    """Run one scenario against a running broker, with the broker's CPU and memory around it."""
    with UsageSampler(broker.process_group) as sampler:
        result = run_generator(broker.url, scenario.perftest_args, duration, warmup, generator_cpu)
    start_ns, end_ns = result["measured_window_monotonic_ns"]
    cores = sampler.cores_used(start_ns, end_ns)
    machine = sampler.machine_cores_used(start_ns, end_ns)
    generator = result["generator"]["cpu_cores_used"]
    return {
        "description": scenario.description,
        "perftest_args": list(scenario.perftest_args),
        "result": result,
        "broker_peak_rss_mib": round(sampler.peak_rss_kib(start_ns, end_ns) / 1024, 1),
        "broker_lifetime_peak_rss_mib": round(
            lifetime_peak_rss_kib(process_group_pids(broker.process_group)) / 1024, 1
        ),
        "broker_cpu_cores_used": round(cores, 2) if cores is not None else None,
        "disk_write_bytes_per_msg": _per_message(
            sampler.write_bytes_per_second(start_ns, end_ns), result
        ),
        # Work of processes that were neither broker nor generator: other users of the machine
        # competing for its cores, which makes the figures less trustworthy.
        "other_cpu_cores_used": (
            round(max(machine - cores - generator, 0.0), 2)
            if machine is not None and cores is not None
            else None
        ),
    }


def _broker_starter(
    name: str, cpu: int | None, leveret_command: str
) -> Callable[[], AbstractContextManager[BrokerUnderTest]]:
    if name == "rabbitmq":
        return lambda: running_rabbitmq(cpu)
    return lambda: running_leveret(cpu, shlex.split(leveret_command))


def _version(name: str, scenarios: dict[str, Any]) -> str:
    brokers = [perftest_result(entry)["broker"] for entry in scenarios.values()]
    product = f"{brokers[0]['product']} {brokers[0]['version']}".strip() if brokers else name
    if name == "rabbitmq":
        otp = erlang_otp_release()
        return f"{product} (Erlang/OTP {otp})" if otp else product
    return product


def measure_broker(
    name: str,
    scenarios: list[Scenario],
    args: argparse.Namespace,
    cpus: tuple[int | None, int | None],
) -> dict[str, Any]:
    broker_cpu, generator_cpu = cpus
    results: dict[str, Any] = {}
    failures: dict[str, str] = {}
    with _broker_starter(name, broker_cpu, args.leveret_command)() as broker:
        for scenario in scenarios:
            try:
                results[scenario.name] = _measure_quietest(broker, scenario, args, generator_cpu)
            except Exception as error:  # noqa: BLE001 - the other scenarios' figures still count
                failures[scenario.name] = f"{type(error).__name__}: {error}"
                print(
                    f"{name}: {scenario.name}: failed: {failures[scenario.name]}",
                    file=sys.stderr,
                    flush=True,
                )
    return {
        "date": _now(),
        "version": _version(name, results),
        "machine": machine_info(),
        "settings": {
            "duration_s": args.duration,
            "warmup_s": args.warmup,
            "broker_cpu": broker_cpu,
            "generator_cpu": generator_cpu,
        },
        "note": args.note,
        "scenarios": results,
        "failures": failures,
    }


def _measure_once(
    broker: BrokerUnderTest, scenario: Scenario, args: argparse.Namespace, generator_cpu: int | None
) -> dict[str, Any]:
    if args.quiet_wait > 0:
        wait_machine_quiet(args.max_other_cpu, args.quiet_wait)
    print(f"{broker.name}: {scenario.name} ...", file=sys.stderr, flush=True)
    if scenario.kind == BACKLOG:
        entry = measure_backlog(broker, scenario.perftest_args, generator_cpu)
        entry["description"] = scenario.description
        entry["perftest_args"] = list(scenario.perftest_args)
    else:
        entry = measure_scenario(broker, scenario, args.duration, args.warmup, generator_cpu)
    entry["date"] = _now()
    entry["note"] = args.note
    print(
        f"{broker.name}: {scenario.name}: {describe_entry(entry)}, other CPU {other_cpu(entry)}",
        file=sys.stderr,
        flush=True,
    )
    return entry


def _measure_quietest(
    broker: BrokerUnderTest, scenario: Scenario, args: argparse.Namespace, generator_cpu: int | None
) -> dict[str, Any]:
    """Run a scenario until one run was undisturbed by other work, at most --attempts times.

    The run kept is the one with the least other CPU, never the fastest: choosing by speed
    would flatter the broker.
    """
    attempts: list[dict[str, Any]] = []
    for _ in range(max(args.attempts, 1)):
        attempts.append(_measure_once(broker, scenario, args, generator_cpu))
        disturbance = other_cpu(attempts[-1])
        if disturbance is not None and disturbance <= args.max_other_cpu:
            break
    kept = min(attempts, key=lambda entry: other_cpu(entry) or 0.0)
    kept["attempts_other_cpu"] = [other_cpu(entry) for entry in attempts]
    return kept


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M")


def _cpus(args: argparse.Namespace) -> tuple[int | None, int | None]:
    available = os.sched_getaffinity(0)
    if args.broker_cpu in available and args.generator_cpu in available:
        return args.broker_cpu, args.generator_cpu
    print(
        f"cores {args.broker_cpu} and {args.generator_cpu} are not both available "
        f"({sorted(available)}); running unpinned",
        file=sys.stderr,
    )
    return None, None


def _brokers(only: str | None) -> Iterator[str]:
    yield from ([only] if only else ["rabbitmq", "leveret"])


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    scenarios = find_scenarios(args.scenario)
    cpus = _cpus(args)
    results = load_results(args.results)
    failed = False
    for name in _brokers(args.only):
        try:
            run = measure_broker(name, scenarios, args, cpus)
        except Exception as error:  # noqa: BLE001 - one broker failing must not lose the other's figures
            print(f"{name}: failed: {error}", file=sys.stderr)
            failed = True
            continue
        failed = failed or bool(run["failures"])
        # The broker's stored figures stay for the scenarios this run skipped or failed.
        previous = results["brokers"].get(name, {}).get("scenarios", {})
        run["scenarios"] = {**previous, **run["scenarios"]}
        store_run(results, name, run)
        save_results(args.results, results)
    markdown = render_markdown(results)
    previous = args.markdown.read_text() if args.markdown.exists() else ""
    args.markdown.write_text(keep_foreign_sections(markdown, previous))
    print(markdown)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
