"""Deterministic simulation of Raft clusters under seeded faults, with safety checked every step.

A failing seed is printed with the last events before the failure; rerun just that seed with
`LEVERET_SIM_SEED=<seed> pytest tests/cluster/test_raft_sim.py -k single`.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

from tests.cluster.sim import run_seed
from tests.cluster.sim_disks import FileDisk

DEFAULT_SEEDS = 400
SLOW_SEEDS = 5000
_BATCH = 50

slow = pytest.mark.skipif(os.environ.get("LEVERET_SLOW") != "1", reason="set LEVERET_SLOW=1")


def _run_batch(first: int, count: int) -> None:
    for seed in range(first, first + count):
        print(f"simulating seed {seed}")
        run_seed(seed)


@pytest.mark.parametrize("first", range(0, DEFAULT_SEEDS, _BATCH))
def test_simulated_schedules_keep_raft_safe_and_live(first: int) -> None:
    _run_batch(first, _BATCH)


@pytest.mark.slow
@slow
@pytest.mark.parametrize("first", range(DEFAULT_SEEDS, SLOW_SEEDS, _BATCH))
def test_many_more_simulated_schedules(first: int) -> None:
    _run_batch(first, _BATCH)


def test_single_seed() -> None:
    """Replays one schedule: LEVERET_SIM_SEED=<seed> reproduces a failing seed exactly."""
    run_seed(int(os.environ.get("LEVERET_SIM_SEED", "0")))


@pytest.mark.parametrize("seed", range(8))
def test_schedules_hold_with_the_real_file_storage(tmp_path: Path, seed: int) -> None:
    """Crashes tear the real log file mid-batch; recovery must keep Raft safe all the same."""
    sim = run_seed(seed, new_disk=lambda node_id: FileDisk(tmp_path / node_id))
    assert sim.stats["crash"] > 0


def test_a_seed_replays_exactly() -> None:
    first, second = run_seed(7), run_seed(7)
    assert list(first.trace) == list(second.trace)
    assert first.invariants.digests == second.invariants.digests
    assert first.invariants.leaders == second.invariants.leaders
    assert first.now == second.now


def test_schedules_really_are_adversarial() -> None:
    """The faults happen: without them the safety checks above would prove little."""
    totals: Counter[str] = Counter()
    leaders = 0
    for seed in range(30):
        sim = run_seed(seed)
        totals.update(sim.stats)
        leaders += len(sim.invariants.leaders)
    assert leaders > 60
    for event in (
        "crash",
        "crash_mid_batch",
        "partition",
        "dropped",
        "duplicated",
        "truncation",
        "snapshot_installed",
        "went_quiet",
        "suspected",
    ):
        assert totals[event] > 0, event
