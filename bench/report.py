"""Side-by-side results: stored as JSON per broker, rendered as the Markdown of RESULTS.md."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from bench.scenarios import BACKLOG, SCENARIOS

BROKERS = ("rabbitmq", "leveret")
_TITLES = {"rabbitmq": "RabbitMQ", "leveret": "Leveret"}
_FORMAT = 2
# The table's typography, spelled by name so that it cannot be mistaken for "-" and "x".
_DASH = "\N{EN DASH}"  # an empty cell, a span of dates
_TIMES = "\N{MULTIPLICATION SIGN}"  # a ratio
_KINDS = {scenario.name: scenario.kind for scenario in SCENARIOS}
# A section another script keeps in RESULTS.md: `<!-- NAME: start -->` ... `<!-- NAME: end -->`.
_FOREIGN_SECTION = re.compile(r"<!-- ([\w.-]+): start -->.*?<!-- \1: end -->", re.DOTALL)


def load_results(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {"format": _FORMAT, "brokers": {}}
    results: dict[str, Any] = json.loads(path.read_text())
    results.setdefault("brokers", {})
    for run in results["brokers"].values():
        # Format 1 kept the date and note per run only; each figure now carries its own.
        for entry in run.get("scenarios", {}).values():
            entry.setdefault("date", run.get("date", ""))
            entry.setdefault("note", run.get("note", ""))
    return results


def store_run(results: dict[str, Any], broker: str, run: dict[str, Any]) -> dict[str, Any]:
    """Replace `broker`'s run, keeping the other broker's, so a ratio survives an --only run."""
    results["format"] = _FORMAT
    results["brokers"][broker] = run
    return results


def save_results(path: Path, results: dict[str, Any]) -> None:
    path.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")


def is_backlog(name: str, entry: dict[str, Any] | None = None) -> bool:
    if entry is not None and "kind" in entry:
        return bool(entry["kind"] == BACKLOG)
    return _KINDS.get(name) == BACKLOG


def perftest_result(entry: dict[str, Any]) -> dict[str, Any]:
    """The perftest result an entry holds: the timed run, or a backlog's fill."""
    result: dict[str, Any] = entry["fill"] if entry.get("kind") == BACKLOG else entry["result"]
    return result


def other_cpu(entry: dict[str, Any]) -> float | None:
    """Cores that neither broker nor generator used while the figures were taken."""
    key = "fill_other_cpu_cores_used" if entry.get("kind") == BACKLOG else "other_cpu_cores_used"
    value: float | None = entry.get(key)
    return value


def headline_rate(result: dict[str, Any]) -> float:
    """The rate a scenario is judged by: messages delivered end to end, else those accepted."""
    parameters = result["parameters"]
    if parameters["consumers"] > 0:
        return float(result["consumed_msg_s"])
    if parameters["confirm"] > 0:
        return float(result["confirmed_msg_s"])
    return float(result["published_msg_s"])


def describe_entry(entry: dict[str, Any]) -> str:
    """One line for the console while a run goes on."""
    if entry.get("kind") == BACKLOG:
        return (
            f"fill {entry['fill_msg_s']:,.0f} msg/s, RSS {entry['rss_settled_mib']:.0f} MiB, "
            f"restart: stop {entry['stop_s']:.1f} s, first get {entry['start_first_get_s']} s"
        )
    result = entry["result"]
    return f"{headline_rate(result):,.0f} msg/s, p99 {result['latency_us']['p99']} µs"


def _ms(microseconds: float | None) -> str:
    if microseconds is None:
        return _DASH
    milliseconds = microseconds / 1000
    return f"{milliseconds:.2f}" if milliseconds < 10 else f"{milliseconds:.0f}"


def _rate(value: float | None) -> str:
    return _DASH if value is None else f"{value:,.0f}"


def _cores(value: float | None) -> str:
    return _DASH if value is None else f"{value:.2f}"


def _bytes(value: float | None) -> str:
    return _DASH if value is None else f"{value:,.0f}"


def _seconds(value: float | None) -> str:
    return _DASH if value is None else f"{value:.2f}"


def _entry(results: dict[str, Any], broker: str, scenario: str) -> dict[str, Any] | None:
    entry: dict[str, Any] | None = (
        results["brokers"].get(broker, {}).get("scenarios", {}).get(scenario)
    )
    return entry


def _ratio(results: dict[str, Any], scenario: str) -> str:
    leveret = _entry(results, "leveret", scenario)
    rabbitmq = _entry(results, "rabbitmq", scenario)
    if leveret is None or rabbitmq is None:
        return "pending"
    reference = headline_rate(rabbitmq["result"])
    return f"{headline_rate(leveret['result']) / reference:.2f}{_TIMES}" if reference else _DASH


def _row(results: dict[str, Any], scenario: str, broker: str) -> str:
    entry = _entry(results, broker, scenario)
    ratio = _ratio(results, scenario) if broker == "leveret" else ""
    if entry is None:
        cells = [scenario, _TITLES[broker]] + ["pending"] * 11 + [ratio or "pending"]
        return "| " + " | ".join(cells) + " |"
    result = entry["result"]
    latency = result["latency_us"]
    failed = " ⚠" if result["errors"] else ""
    cells = [
        scenario,
        _TITLES[broker] + failed,
        _rate(headline_rate(result)),
        _rate(result["published_msg_s"]),
        _rate(result["confirmed_msg_s"]) if result["parameters"]["confirm"] else _DASH,
        _ms(latency["p50"]),
        _ms(latency["p95"]),
        _ms(latency["p99"]),
        f"{entry['broker_peak_rss_mib']:.0f}",
        _cores(entry["broker_cpu_cores_used"]),
        _bytes(entry.get("disk_write_bytes_per_msg")),
        f"{result['generator']['cpu_cores_used']:.2f}",
        _cores(entry.get("other_cpu_cores_used")),
        ratio,
    ]
    return "| " + " | ".join(cells) + " |"


def _backlog_ratio(results: dict[str, Any], scenario: str) -> str:
    leveret = _entry(results, "leveret", scenario)
    rabbitmq = _entry(results, "rabbitmq", scenario)
    if leveret is None or rabbitmq is None:
        return "pending"
    parts = []
    for label, key in (("RSS", "rss_settled_mib"), ("restart", "start_first_get_s")):
        if rabbitmq[key]:
            parts.append(f"{label} {leveret[key] / rabbitmq[key]:.2f}{_TIMES}")
    return ", ".join(parts) or _DASH


def _backlog_row(results: dict[str, Any], scenario: str, broker: str) -> str:
    entry = _entry(results, broker, scenario)
    ratio = _backlog_ratio(results, scenario) if broker == "leveret" else ""
    if entry is None:
        cells = [scenario, _TITLES[broker]] + ["pending"] * 11 + [ratio or "pending"]
        return "| " + " | ".join(cells) + " |"
    failed = " ⚠" if entry["fill"]["errors"] else ""
    cells = [
        scenario,
        _TITLES[broker] + failed,
        _rate(entry["fill_msg_s"]),
        f"{entry['fill_peak_rss_mib']:.0f}",
        f"{entry['rss_settled_mib']:.0f}",
        _bytes(entry["fill_disk_write_bytes_per_msg"]),
        _cores(entry["fill_broker_cpu_cores_used"]),
        _cores(entry["fill_other_cpu_cores_used"]),
        _seconds(entry["stop_s"]),
        _seconds(entry["start_accepting_s"]),
        _seconds(entry["start_declare_ok_s"]),
        _seconds(entry["start_first_get_s"]),
        f"{entry['rss_serving_settled_mib']:.0f}",
        ratio,
    ]
    return "| " + " | ".join(cells) + " |"


def _scenario_names(results: dict[str, Any]) -> list[str]:
    names = [scenario.name for scenario in SCENARIOS]
    for run in results["brokers"].values():
        names += [name for name in run.get("scenarios", {}) if name not in names]
    return names


def _entries(results: dict[str, Any], broker: str) -> list[dict[str, Any]]:
    return list(results["brokers"].get(broker, {}).get("scenarios", {}).values())


def _runs_table(results: dict[str, Any]) -> list[str]:
    lines = [
        "| Broker | Version | Dates (UTC) | Measured + warm-up s | Machine |",
        "|---|---|---|---|---|",
    ]
    for broker in BROKERS:
        run = results["brokers"].get(broker)
        if run is None:
            lines.append(f"| {_TITLES[broker]} | pending | | | |")
            continue
        entries = _entries(results, broker)
        dates = sorted({entry["date"] for entry in entries if entry.get("date")})
        timings = sorted(
            {
                _timing(entry, run.get("settings", {}))
                for entry in entries
                if entry.get("kind") != BACKLOG
            }
        )
        span = f"{dates[0]} {_DASH} {dates[-1]}" if len(dates) > 1 else "".join(dates)
        lines.append(
            f"| {_TITLES[broker]} | {run['version']} | {span} | {', '.join(timings)} "
            f"| {_machine(run['machine'])} |"
        )
    return lines


def _timing(entry: dict[str, Any], settings: dict[str, Any]) -> str:
    parameters = entry["result"]["parameters"]
    duration = parameters.get("duration", settings.get("duration_s"))
    warmup = parameters.get("warmup", settings.get("warmup_s"))
    return f"{duration}+{warmup}"


def _notes(results: dict[str, Any]) -> list[str]:
    lines = []
    for broker in BROKERS:
        scenarios = results["brokers"].get(broker, {}).get("scenarios", {})
        by_note: dict[str, list[str]] = {}
        for name, entry in scenarios.items():
            if entry.get("note"):
                by_note.setdefault(entry["note"], []).append(name)
        for note, names in by_note.items():
            lines.append(f"- {_TITLES[broker]} ({', '.join(names)}): {note}")
        run = results["brokers"].get(broker, {})
        for name, error in run.get("failures", {}).items():
            lines.append(
                f"- {_TITLES[broker]}: {name} failed in the run of {run['date']} "
                f"(figures shown are older, if any): {error[:300]}"
            )
    return lines


def render_markdown(results: dict[str, Any]) -> str:
    lines = [
        "# Benchmark results: Leveret and RabbitMQ side by side",
        "",
        "Written by `bench/side_by_side.py` from `bench/results.json`; do not edit by hand.",
        "How the figures are taken, and what each scenario means: `bench/README.md`.",
        "",
        "Each broker runs alone, pinned to core 0 (RabbitMQ with `+S 1:1`); the load generator",
        "runs on core 1. msg/s is the consumed rate over the measured seconds (warm-up excluded);",
        "latency is publish-to-delivery; CPU columns are cores used (1.00 = one core saturated);",
        "disk B/msg is what the broker wrote to storage per message published;",
        "other CPU is what the rest of the machine used meanwhile (near 0 for clean figures).",
        "",
        (
            "| Scenario | Broker | msg/s | published msg/s | confirmed msg/s | p50 ms | p95 ms "
            "| p99 ms | broker peak RSS MiB | broker CPU | disk B/msg | generator CPU | other CPU "
            "| Leveret / RabbitMQ |"
        ),
        "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    names = _scenario_names(results)
    backlog = [
        name
        for name in names
        if is_backlog(name, _entry(results, "leveret", name) or _entry(results, "rabbitmq", name))
    ]
    for name in names:
        if name not in backlog:
            lines += [_row(results, name, broker) for broker in BROKERS]
    if backlog:
        lines += [
            "",
            "## A deep durable queue, and a restart",
            "",
            "The queue is filled with confirms and no consumer; RSS is read 10 s after the last",
            "confirm, and again 10 s after the restarted broker first answered basic.get. Times",
            "run from SIGTERM (stop) and from launching the broker again (start); they are read",
            "by polling, to within about 0.2 s.",
            "",
            (
                "| Scenario | Broker | fill msg/s | fill peak RSS MiB | RSS full MiB | disk B/msg "
                "| fill broker CPU | fill other CPU | stop s | start: accepting s "
                "| start: declare-ok with all s | start: first get s | RSS after restart MiB "
                "| Leveret / RabbitMQ |"
            ),
            "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
        ]
        for name in backlog:
            lines += [_backlog_row(results, name, broker) for broker in BROKERS]
    lines += ["", "## Runs", "", *_runs_table(results)]
    notes = _notes(results)
    if notes:
        lines += ["", "## Notes", "", *notes]
    lines += ["", "## Scenarios", ""]
    for scenario in SCENARIOS:
        lines.append(
            f"- `{scenario.name}`: {scenario.description} "
            f"(`perftest {' '.join(scenario.perftest_args)}`)."
        )
    return "\n".join(lines) + "\n"


def keep_foreign_sections(rendered: str, previous: str) -> str:
    """`rendered`, followed by the sections other scripts keep between their markers in the
    previous RESULTS.md, so that rewriting the side-by-side figures does not erase theirs."""
    sections = [match.group(0) for match in _FOREIGN_SECTION.finditer(previous)]
    if not sections:
        return rendered
    return rendered.rstrip("\n") + "\n\n" + "\n\n".join(sections) + "\n"


def _machine(machine: dict[str, Any]) -> str:
    return (
        f"{machine['cpu_model']}, {machine['cpu_count']} cores, {machine['memory_gib']} GiB, "
        f"Linux {machine['kernel']}, Python {machine['python']}"
    )
