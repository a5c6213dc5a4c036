"""Side-by-side results: stored as JSON per broker, rendered as the Markdown of RESULTS.md."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.scenarios import SCENARIOS

BROKERS = ("rabbitmq", "leveret")
_TITLES = {"rabbitmq": "RabbitMQ", "leveret": "Leveret"}
_FORMAT = 1


def load_results(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {"format": _FORMAT, "brokers": {}}
    results: dict[str, Any] = json.loads(path.read_text())
    results.setdefault("brokers", {})
    return results


def store_run(results: dict[str, Any], broker: str, run: dict[str, Any]) -> dict[str, Any]:
    """Replace `broker`'s run, keeping the other broker's, so a ratio survives an --only run."""
    results["format"] = _FORMAT
    results["brokers"][broker] = run
    return results


def save_results(path: Path, results: dict[str, Any]) -> None:
    path.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")


def headline_rate(result: dict[str, Any]) -> float:
    """The rate a scenario is judged by: messages delivered end to end, else those accepted."""
    parameters = result["parameters"]
    if parameters["consumers"] > 0:
        return float(result["consumed_msg_s"])
    if parameters["confirm"] > 0:
        return float(result["confirmed_msg_s"])
    return float(result["published_msg_s"])


def _ms(microseconds: float | None) -> str:
    if microseconds is None:
        return "–"
    milliseconds = microseconds / 1000
    return f"{milliseconds:.2f}" if milliseconds < 10 else f"{milliseconds:.0f}"


def _rate(value: float | None) -> str:
    return "–" if value is None else f"{value:,.0f}"


def _cores(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def _ratio(results: dict[str, Any], scenario: str) -> str:
    brokers = results["brokers"]
    try:
        leveret = brokers["leveret"]["scenarios"][scenario]["result"]
        rabbitmq = brokers["rabbitmq"]["scenarios"][scenario]["result"]
    except KeyError:
        return "pending"
    reference = headline_rate(rabbitmq)
    return f"{headline_rate(leveret) / reference:.2f}×" if reference else "–"


def _row(results: dict[str, Any], scenario: str, broker: str) -> str:
    entry = results["brokers"].get(broker, {}).get("scenarios", {}).get(scenario)
    ratio = _ratio(results, scenario) if broker == "leveret" else ""
    if entry is None:
        cells = [scenario, _TITLES[broker]] + ["pending"] * 10 + [ratio or "pending"]
        return "| " + " | ".join(cells) + " |"
    result = entry["result"]
    latency = result["latency_us"]
    failed = " ⚠" if result["errors"] else ""
    cells = [
        scenario,
        _TITLES[broker] + failed,
        _rate(headline_rate(result)),
        _rate(result["published_msg_s"]),
        _rate(result["confirmed_msg_s"]) if result["parameters"]["confirm"] else "–",
        _ms(latency["p50"]),
        _ms(latency["p95"]),
        _ms(latency["p99"]),
        f"{entry['broker_peak_rss_mib']:.0f}",
        _cores(entry["broker_cpu_cores_used"]),
        f"{result['generator']['cpu_cores_used']:.2f}",
        _cores(entry.get("other_cpu_cores_used")),
        ratio,
    ]
    return "| " + " | ".join(cells) + " |"


def _scenario_names(results: dict[str, Any]) -> list[str]:
    names = [scenario.name for scenario in SCENARIOS]
    for run in results["brokers"].values():
        names += [name for name in run.get("scenarios", {}) if name not in names]
    return names


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
        "other CPU is what the rest of the machine used meanwhile (near 0 for clean figures).",
        "",
        ("| Scenario | Broker | msg/s | published msg/s | confirmed msg/s | p50 ms | p95 ms "
         "| p99 ms | broker peak RSS MiB | broker CPU | generator CPU | other CPU "
         "| Leveret / RabbitMQ |"),
        "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for name in _scenario_names(results):
        for broker in BROKERS:
            lines.append(_row(results, name, broker))
    lines += ["", "## Runs", "",
              "| Broker | Version | Date (UTC) | Measured s | Warm-up s | Machine |",
              "|---|---|---|--:|--:|---|"]
    for broker in BROKERS:
        run = results["brokers"].get(broker)
        if run is None:
            lines.append(f"| {_TITLES[broker]} | pending | | | | |")
            continue
        settings = run["settings"]
        lines.append(
            f"| {_TITLES[broker]} | {run['version']} | {run['date']} | {settings['duration_s']} "
            f"| {settings['warmup_s']} | {_machine(run['machine'])} |"
        )
    notes = [(broker, results["brokers"][broker].get("note")) for broker in BROKERS
             if broker in results["brokers"]]
    notes = [(broker, note) for broker, note in notes if note]
    if notes:
        lines += ["", "## Notes", ""]
        lines += [f"- {_TITLES[broker]}: {note}" for broker, note in notes]
    lines += ["", "## Scenarios", ""]
    for scenario in SCENARIOS:
        lines.append(f"- `{scenario.name}`: {scenario.description} "
                     f"(`perftest {' '.join(scenario.perftest_args)}`).")
    return "\n".join(lines) + "\n"


def _machine(machine: dict[str, Any]) -> str:
    return (f"{machine['cpu_model']}, {machine['cpu_count']} cores, {machine['memory_gib']} GiB, "
            f"Linux {machine['kernel']}, Python {machine['python']}")
