"""Confirm settlement, latency percentiles and the results table count what they claim to."""

from __future__ import annotations

import asyncio
import time

from bench.latency import LatencyRecorder, merge_samples, percentile, summarise_us
from bench.report import keep_foreign_sections, render_markdown
from bench.roles import RoleReport, _ConfirmTracker


def _tracker() -> tuple[_ConfirmTracker, RoleReport]:
    report = RoleReport("producer", seconds=1000)
    return _ConfirmTracker(report, start_ns=time.monotonic_ns()), report


def test_single_multiple_and_out_of_order_confirms_settle_each_publish_once() -> None:
    async def scenario() -> None:
        tracker, report = _tracker()
        tracker.on_confirm(2, False, False)  # out of order
        assert tracker.settled == 1
        tracker.on_confirm(5, True, False)  # settles 1, 3, 4, 5 (2 already)
        assert tracker.settled == 5
        tracker.on_confirm(5, True, False)  # repeated: nothing new
        tracker.on_confirm(3, False, False)
        assert tracker.settled == 5
        tracker.on_confirm(6, False, True)  # a nack settles too, counted apart
        assert tracker.settled == 6
        assert sum(report.confirmed) == 5 and sum(report.nacked) == 1

    asyncio.run(scenario())


def test_percentiles_use_nearest_rank() -> None:
    samples = sorted(range(1, 101))
    assert percentile(samples, 0.50) == 50
    assert percentile(samples, 0.99) == 99
    assert percentile([7], 0.99) == 7
    summary = summarise_us([1000, 2000, 3000, 4000])
    assert summary["p50"] == 2.0 and summary["max"] == 4.0 and summary["samples"] == 4


def test_a_full_recorder_thins_evenly_and_keeps_measuring() -> None:
    recorder = LatencyRecorder(capacity=100)
    for batch in range(50):
        recorder.record(1_000_000 + batch, [1_000_000 - 10] * 10)  # each latency batch + 10
    assert recorder.seen == 500
    assert recorder.stride > 1
    samples = merge_samples([recorder.to_bytes()])
    assert 0 < len(samples) <= 100
    assert samples[0] == 10 and samples[-1] >= 40  # spread over the whole run, not its start


def test_stamps_from_short_bodies_are_not_latencies() -> None:
    recorder = LatencyRecorder()
    recorder.record(100, [90, -1, 80])
    assert merge_samples([recorder.to_bytes()]) == [10, 20]


def _entry(rate: float) -> dict[str, object]:
    result = {
        "parameters": {"consumers": 1, "confirm": 0},
        "consumed_msg_s": rate,
        "published_msg_s": rate,
        "confirmed_msg_s": 0.0,
        "errors": [],
        "latency_us": {"p50": 1500.0, "p95": 2500.0, "p99": 12500.0},
        "generator": {"cpu_cores_used": 0.3},
    }
    return {"result": result, "broker_peak_rss_mib": 100.0, "broker_cpu_cores_used": 1.0}


def _run(rate: float) -> dict[str, object]:
    return {
        "version": "x",
        "date": "d",
        "settings": {"duration_s": 15, "warmup_s": 3},
        "machine": {
            "cpu_model": "cpu",
            "cpu_count": 2,
            "memory_gib": 1,
            "kernel": "k",
            "python": "3.11",
        },
        "scenarios": {"a-1p1c-autoack": _entry(rate)},
    }


def test_the_table_shows_the_ratio_or_pending() -> None:
    only_rabbitmq = render_markdown({"brokers": {"rabbitmq": _run(40_000.0)}})
    leveret_row = next(
        line for line in only_rabbitmq.splitlines() if line.startswith("| a-1p1c-autoack | Leveret")
    )
    assert leveret_row.endswith("| pending |")
    both = render_markdown({"brokers": {"rabbitmq": _run(40_000.0), "leveret": _run(30_000.0)}})
    leveret_row = next(
        line for line in both.splitlines() if line.startswith("| a-1p1c-autoack | Leveret")
    )
    assert leveret_row.endswith("| 0.75\N{MULTIPLICATION SIGN} |")
    assert "| 30,000 |" in leveret_row and "| 1.50 | 2.50 | 12 |" in leveret_row


def test_rewriting_the_results_keeps_other_scripts_sections() -> None:
    previous = (
        "# old table\n\n<!-- cluster_bench.py: start -->\n## Cluster\n| a |\n"
        "<!-- cluster_bench.py: end -->\n"
    )
    kept = keep_foreign_sections("# new table\n", previous)
    assert kept.startswith("# new table\n")
    assert "## Cluster\n| a |\n<!-- cluster_bench.py: end -->" in kept
    assert "old table" not in kept
    assert keep_foreign_sections("# new table\n", "# old table\n") == "# new table\n"
