"""Rounds of real faults against a 3-node cluster in network namespaces: no confirmed message is
lost, every repeat is marked redelivered, and the definitions stay linearizable.

The seed is printed first; `LEVERET_FAULTS_SEED=N` (or `python -m tests.faults --seed N`)
replays a run. The short run takes every kind of fault once in a few rounds; the long one
(LEVERET_SLOW=1) runs at least 100 rounds of all of them.
"""

from __future__ import annotations

import os
import random

import pytest

from tests.faults.conftest import require_namespaces
from tests.faults.harness import Report, run
from tests.faults.nemesis import NEMESES, PARTITIONS

LONG_ROUNDS = 100


def _seed() -> int:
    given = os.environ.get("LEVERET_FAULTS_SEED")
    return int(given) if given else random.randrange(2**31)


def _judge(
    seed: int, rounds: int, nemeses: tuple[str, ...], fault_seconds: tuple[float, float]
) -> Report:
    require_namespaces()
    print(f"LEVERET_FAULTS_SEED={seed}")
    report = run(seed, rounds, nemeses=nemeses, fault_seconds=fault_seconds)
    assert report.verdict is not None and report.metadata is not None
    verdict = report.verdict
    assert not verdict.lost, f"seed {seed}: confirmed, never delivered: {verdict.lost[:20]}"
    assert not verdict.unmarked, f"seed {seed}: repeats not marked redelivered: {verdict.unmarked}"
    assert not verdict.unexpected, f"seed {seed}: never published: {verdict.unexpected[:20]}"
    assert report.metadata.ok, f"seed {seed}: definitions not linearizable\n{report.summary()}"
    assert verdict.confirmed > 50 * rounds, "too little was confirmed to mean anything"
    assert report.metadata_operations > 10 * rounds
    return report


def test_a_few_rounds_of_partitions_kills_and_a_power_cut() -> None:
    seed = _seed()
    rng = random.Random(seed)
    # One partition of a seeded kind, a node killed, a node paused, every node killed at once.
    nemeses = (rng.choice(PARTITIONS), "kill", "pause", "power-cut")
    _judge(seed, len(nemeses), nemeses, fault_seconds=(2.0, 3.0))


@pytest.mark.slow
@pytest.mark.timeout(3 * 3600)
def test_a_hundred_rounds_of_every_fault() -> None:
    report = _judge(_seed(), LONG_ROUNDS, tuple(NEMESES), fault_seconds=(2.0, 5.0))
    assert len(report.rounds) >= LONG_ROUNDS
