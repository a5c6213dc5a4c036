"""Rounds of real faults against a federation link between two brokers in network namespaces:
the link cut, slowed, made lossy, its nodes killed and paused. No confirmed message is lost
(it comes out downstream, or is still upstream) and every repeat is marked redelivered.

`LEVERET_FAULTS_SEED=N` replays a run. The short runs take a few rounds; the long one
(LEVERET_SLOW=1) runs 100 rounds of every fault with ack-mode on-confirm.
"""

from __future__ import annotations

import random

import pytest

from tests.faults.conftest import require_namespaces
from tests.faults.federation import NEMESES, ON_PUBLISH_NEMESES, FederationReport, run
from tests.faults.test_fault_rounds import _seed

LONG_ROUNDS = 100


def _judge(
    seed: int,
    rounds: int,
    nemeses: tuple[str, ...],
    ack_mode: str,
    fault_seconds: tuple[float, float],
) -> FederationReport:
    require_namespaces()
    print(f"LEVERET_FAULTS_SEED={seed}")
    report = run(seed, rounds, nemeses, ack_mode, fault_seconds)
    assert report.verdict is not None
    verdict = report.verdict
    assert not verdict.lost, f"seed {seed}: confirmed, never delivered: {verdict.lost[:20]}"
    assert not verdict.unmarked, f"seed {seed}: repeats not marked redelivered: {verdict.unmarked}"
    assert not verdict.unexpected, f"seed {seed}: never published: {verdict.unexpected[:20]}"
    assert verdict.confirmed > 50 * rounds, "too little was confirmed to mean anything"
    return report


def test_on_confirm_link_cut_and_both_ends_killed_and_paused() -> None:
    seed = _seed()
    rng = random.Random(seed)
    pause = rng.choice(("pause-upstream", "pause-downstream"))
    nemeses = ("link", "kill-downstream", pause, rng.choice(("kill-upstream", "lossy")))
    _judge(seed, len(nemeses), nemeses, "on-confirm", fault_seconds=(2.0, 3.0))


def test_on_publish_link_cut_and_upstream_killed() -> None:
    _judge(_seed(), 2, ("link", "kill-upstream"), "on-publish", fault_seconds=(2.0, 3.0))


@pytest.mark.slow
@pytest.mark.timeout(3 * 3600)
def test_a_hundred_rounds_of_every_fault_on_a_link() -> None:
    report = _judge(_seed(), LONG_ROUNDS, tuple(NEMESES), "on-confirm", fault_seconds=(2.0, 5.0))
    assert len(report.rounds) >= LONG_ROUNDS


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_rounds_of_faults_on_an_on_publish_link() -> None:
    _judge(_seed(), 30, ON_PUBLISH_NEMESES, "on-publish", fault_seconds=(2.0, 5.0))
