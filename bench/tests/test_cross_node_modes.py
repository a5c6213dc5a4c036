"""bench/cross_node.py compares each cluster scenario with a standalone node under its load."""

from __future__ import annotations

from typing import Any

from bench.cross_node import (
    LATENCY_PATHS,
    LATENCY_RATES,
    THROUGHPUT,
    _mode,
    _modes,
    latency_wins,
    report,
    speed_probe_ms,
    summarise,
)


def test_each_scenario_has_a_standalone_mode_with_its_own_settings() -> None:
    modes = _modes()
    assert list(modes) == ["auto-ack", "confirms + acks", "confirms + acks, prefetch 1000"]
    for name, (settings, _, _) in THROUGHPUT.items():
        assert modes[_mode(name)] == settings, name


def _samples(paired: bool) -> dict[str, list[Any]]:
    """Two rounds' worth: every scenario at 100 then 300 msg/s, its standalone pair at 200 and
    then 300 (ratios 0.5 and 1.0), the speed probe at 10, 20 and 40 ms, and the cores the
    brokers and the machine used in each run."""
    samples: dict[str, list[Any]] = {"speed ms": [10.0, 20.0, 40.0]}
    for name in THROUGHPUT:
        samples[name] = [100.0, 300.0]
        samples[f"{name} cores"] = [(1.0, 1.5), (1.2, 2.0)]
        if paired:
            samples.setdefault(f"standalone {_mode(name)}", []).extend([200.0, 300.0])
            samples[f"{name} to standalone"] = [0.5, 1.0]
            samples[f"{name} standalone cores"] = [(0.9, 1.25), (1.1, 1.25)]
    for rate in LATENCY_RATES:
        for path in LATENCY_PATHS:
            samples[f"{path} {rate}"] = [(100, 900), (None, None)]
    return samples


def test_a_scenarios_ratio_is_the_median_of_its_pairs_and_the_drift_is_reported() -> None:
    ours, theirs = summarise(_samples(paired=True)), summarise(_samples(paired=False))
    assert ours["publish and consume B, auto-ack to standalone"] == 0.75
    assert ours["baseline"]["auto-ack"] == 250.0  # both auto-ack scenarios' pairs
    assert ours["speed ms"] == (10.0, 20.0, 40.0)
    assert ours["latency 1000"] == (100, 900)  # a run with too few messages has no figure
    ours["idle clusters cores"], ours["cancel"], theirs["cancel"] = 0.01, 0.02, 0.05
    text = report(ours, theirs, seconds=8, rounds=2)
    assert (
        "| publish and consume B, auto-ack | 200 (0.1k-0.3k) | 200 (0.1k-0.3k) | 1.00x | 0.75x |"
        in text
    )
    assert "took 10 / 20 / 40 ms of CPU" in text
    # The cores each side used: the median of the runs' nodes and machine figures.
    assert "| publish B, consume A, auto-ack | 1.10 / 1.75 | 1.00 / 1.25 | 1.10 / 1.75 |" in text


def test_latency_pairs_count_where_leveret_was_lower_and_skip_runs_without_figures() -> None:
    ours = {f"latency {rate}": [(100, 900), (300, 700), (None, None)] for rate in LATENCY_RATES}
    theirs = {f"latency {rate}": [(200, 800), (300, 800), (150, 600)] for rate in LATENCY_RATES}
    wins = latency_wins(ours, theirs)
    assert wins == {rate: (2, 1, 2) for rate in LATENCY_RATES}
    figures, rabbit = summarise(_samples(paired=True)), summarise(_samples(paired=False))
    figures["idle clusters cores"], figures["cancel"], rabbit["cancel"] = 0.01, 0.02, 0.05
    figures["latency wins"] = wins
    text = report(figures, rabbit, seconds=8, rounds=3)
    assert "| 10,000 msg/s | 100 / 900 | 100 / 900 | 2 / 1 of 2 |" in text


def test_the_speed_probe_takes_some_cpu_time() -> None:
    assert speed_probe_ms() > 0
