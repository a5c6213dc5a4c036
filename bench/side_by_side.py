"""Measure RabbitMQ and Leveret on this machine, one at a time, and update bench/RESULTS.md.

Run `python -m bench.side_by_side --help` (or `python bench/side_by_side.py --help`).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bench` and `tests` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.brokers import (
    REPO_ROOT,
    BrokerUnderTest,
    default_leveret_command,
    erlang_otp_release,
    running_leveret,
    running_rabbitmq,
)
from bench.procinfo import UsageSampler, lifetime_peak_rss_kib, process_group_pids
from bench.report import headline_rate, load_results, render_markdown, save_results, store_run
from bench.scenarios import Scenario, find_scenarios

BENCH_DIR = Path(__file__).resolve().parent
_GENERATOR_GRACE_S = 120


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=["rabbitmq", "leveret"],
                        help="measure one broker; the other's stored figures are kept")
    parser.add_argument("--scenario", action="append", default=[],
                        help="run only this scenario (repeatable; default: all)")
    parser.add_argument("--duration", type=int, default=15, help="measured seconds per scenario")
    parser.add_argument("--warmup", type=int, default=3, help="unmeasured seconds before them")
    parser.add_argument("--broker-cpu", type=int, default=0, help="core the broker is pinned to")
    parser.add_argument("--generator-cpu", type=int, default=1,
                        help="core the load generator is pinned to")
    parser.add_argument("--leveret-command", default=shlex.join(default_leveret_command()),
                        help="how to start a Leveret node (server flags are appended)")
    parser.add_argument("--results", type=Path, default=BENCH_DIR / "results.json")
    parser.add_argument("--markdown", type=Path, default=BENCH_DIR / "RESULTS.md")
    parser.add_argument("--note", default="", help="a remark stored with this run")
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
    return {"cpu_model": model, "cpu_count": os.cpu_count(), "memory_gib": memory_gib,
            "kernel": platform.release(), "python": platform.python_version()}


def _run_generator(url: str, scenario: Scenario, duration: int, warmup: int,
                   cpu: int | None) -> dict[str, Any]:
    argv = [
        *(["taskset", "-c", str(cpu)] if cpu is not None else []),
        sys.executable, "-m", "bench.perftest", "--uri", url, *scenario.perftest_args,
        "--time", str(duration), "--warmup", str(warmup),
    ]
    completed = subprocess.run(argv, check=False, cwd=REPO_ROOT, capture_output=True, text=True,
                               timeout=duration + warmup + _GENERATOR_GRACE_S)
    if not completed.stdout.strip():
        raise RuntimeError(f"perftest failed ({completed.returncode}):\n{completed.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(completed.stdout)
    return result


def measure_scenario(broker: BrokerUnderTest, scenario: Scenario, duration: int, warmup: int,
                     generator_cpu: int | None) -> dict[str, Any]:
    """Run one scenario against a running broker, with the broker's CPU and memory around it."""
    with UsageSampler(broker.process_group) as sampler:
        result = _run_generator(broker.url, scenario, duration, warmup, generator_cpu)
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
            lifetime_peak_rss_kib(process_group_pids(broker.process_group)) / 1024, 1),
        "broker_cpu_cores_used": round(cores, 2) if cores is not None else None,
        # Work of processes that were neither broker nor generator: other users of the machine
        # competing for its cores, which makes the figures less trustworthy.
        "other_cpu_cores_used": (round(max(machine - cores - generator, 0.0), 2)
                                 if machine is not None and cores is not None else None),
    }


def _broker_starter(name: str, cpu: int | None,
                    leveret_command: str) -> Callable[[], AbstractContextManager[BrokerUnderTest]]:
    if name == "rabbitmq":
        return lambda: running_rabbitmq(cpu)
    return lambda: running_leveret(cpu, shlex.split(leveret_command))


def _version(name: str, scenarios: dict[str, Any]) -> str:
    brokers = [entry["result"]["broker"] for entry in scenarios.values()]
    product = f"{brokers[0]['product']} {brokers[0]['version']}".strip() if brokers else name
    if name == "rabbitmq":
        otp = erlang_otp_release()
        return f"{product} (Erlang/OTP {otp})" if otp else product
    return product


def measure_broker(name: str, scenarios: list[Scenario], args: argparse.Namespace,
                   cpus: tuple[int | None, int | None]) -> dict[str, Any]:
    broker_cpu, generator_cpu = cpus
    results: dict[str, Any] = {}
    with _broker_starter(name, broker_cpu, args.leveret_command)() as broker:
        for scenario in scenarios:
            print(f"{name}: {scenario.name} ({args.warmup}+{args.duration} s) ...",
                  file=sys.stderr, flush=True)
            entry = measure_scenario(broker, scenario, args.duration, args.warmup, generator_cpu)
            results[scenario.name] = entry
            print(f"{name}: {scenario.name}: {headline_rate(entry['result']):,.0f} msg/s, "
                  f"p99 {entry['result']['latency_us']['p99']} µs", file=sys.stderr, flush=True)
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M"),
        "version": _version(name, results),
        "machine": machine_info(),
        "settings": {"duration_s": args.duration, "warmup_s": args.warmup,
                     "broker_cpu": broker_cpu, "generator_cpu": generator_cpu},
        "note": args.note,
        "scenarios": results,
    }


def _cpus(args: argparse.Namespace) -> tuple[int | None, int | None]:
    available = os.sched_getaffinity(0)
    if args.broker_cpu in available and args.generator_cpu in available:
        return args.broker_cpu, args.generator_cpu
    print(f"cores {args.broker_cpu} and {args.generator_cpu} are not both available "
          f"({sorted(available)}); running unpinned", file=sys.stderr)
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
        if len(scenarios) < len(find_scenarios([])):
            # A partial run keeps the broker's stored figures for the scenarios it skipped.
            previous = results["brokers"].get(name, {}).get("scenarios", {})
            run["scenarios"] = {**previous, **run["scenarios"]}
        store_run(results, name, run)
        save_results(args.results, results)
    markdown = render_markdown(results)
    args.markdown.write_text(markdown)
    print(markdown)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
