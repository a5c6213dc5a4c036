"""The cluster bench's pure parts: timing each operation, its time limit, and its RESULTS.md
parts."""

from __future__ import annotations

import threading

import pytest

from bench.cluster_bench import (
    END_MARK,
    START_MARK,
    DeclareRun,
    Load,
    merge_section,
    part_mark,
    render_declares,
    split_parts,
    timed_each,
    within,
)
from bench.report import keep_foreign_sections

_LEGACY = (
    "# Side by side\n\nfigures\n\n"
    f"{START_MARK}\n## Cluster metadata (Raft over gRPC)\n\n| 1 node | 1 | 810 |\n{END_MARK}\n"
    "after\n"
)


def test_each_operation_is_timed_once_in_order() -> None:
    seen: list[str] = []
    load = timed_each(["a", "b", "c"], seen.append)
    assert seen == ["a", "b", "c"]
    assert load.commands == 3 and len(load.latencies) == 3
    assert sum(load.latencies) <= load.seconds


def test_work_past_its_time_limit_is_abandoned_and_errors_are_passed_on() -> None:
    release = threading.Event()
    try:
        with pytest.raises(TimeoutError):
            within(0.05, lambda: release.wait(10))
    finally:
        release.set()
    with pytest.raises(ValueError, match="refused"):
        within(10, lambda: int("refused"))
    assert within(10, lambda: 7) == 7


def test_a_section_written_before_parts_had_marks_is_the_metadata_part() -> None:
    inside = _LEGACY.split(START_MARK)[1].split(END_MARK)[0]
    assert split_parts(inside) == {
        "metadata": "## Cluster metadata (Raft over gRPC)\n\n| 1 node | 1 | 810 |"
    }
    assert split_parts("\n") == {}


def test_writing_one_part_keeps_the_other_and_the_rest_of_the_file() -> None:
    with_declares = merge_section(_LEGACY, {"declares": "## AMQP\n| first |"})
    assert with_declares.startswith("# Side by side\n\nfigures\n\n")
    assert with_declares.endswith(f"{END_MARK}\nafter\n")
    assert "| 1 node | 1 | 810 |" in with_declares
    assert with_declares.index(part_mark("metadata")) < with_declares.index(part_mark("declares"))

    again = merge_section(with_declares, {"declares": "## AMQP\n| second |"})
    assert "| first |" not in again and again.count(part_mark("declares")) == 1
    assert "| 1 node | 1 | 810 |" in again

    metadata_rewritten = merge_section(again, {"metadata": "## Cluster metadata\n| new |"})
    assert "| 810 |" not in metadata_rewritten and "| second |" in metadata_rewritten

    fresh = merge_section("# Side by side\n", {"declares": "## AMQP"})
    assert (
        fresh == f"# Side by side\n\n{START_MARK}\n{part_mark('declares')}\n## AMQP\n{END_MARK}\n"
    )


def test_the_side_by_side_report_keeps_the_whole_section_with_its_parts() -> None:
    previous = merge_section(_LEGACY, {"declares": "## AMQP\n| first |"})
    kept = keep_foreign_sections("# new\n", previous)
    section = previous[previous.index(START_MARK) : previous.index(END_MARK) + len(END_MARK)]
    assert kept == "# new\n\n" + section + "\n"


def test_the_declares_table_has_one_row_per_run() -> None:
    def load(milliseconds: list[float]) -> Load:
        latencies = [value / 1000 for value in milliseconds]
        return Load(len(latencies), sum(latencies), latencies)

    runs = [
        DeclareRun(
            "Leveret, 1 node (standalone)", "the node", load([1.0] * 99 + [3.0]), load([0.5] * 100)
        ),
        DeclareRun(
            "Leveret, 3 nodes (Raft)",
            "a follower",
            load([4.0] * 100),
            load([2.0] * 100),
            load([1.0] * 100),
        ),
    ]
    text = render_declares(runs, 0.5)  # 100 declares in 102 ms: 980/s
    assert "declares 100 durable queues" in text
    assert "as a 3-node cluster (joined with rabbitmqctl join_cluster" in text.replace("\n", " ")
    assert (
        "| Leveret, 1 node (standalone) | the node | 980 | 1.00 | 3.00 | 2,000 | 0.50 | 0.50 "
        "|  |  |" in text
    )
    assert (
        "| Leveret, 3 nodes (Raft) | a follower | 250 | 4.00 | 4.00 | 500 | 2.00 | 2.00 | 1,000 "
        "| 1.00 |" in text
    )
    assert "Load average (1 min) as the runs began: 0.50." in text
