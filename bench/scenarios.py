"""The side-by-side scenarios: named perftest parameter sets. Add a scenario by adding a row."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    perftest_args: tuple[str, ...]  # perftest flags, without --uri, -z and --warmup


SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        name="a-1p1c-autoack",
        description="1 producer, 1 consumer, one queue, 100-byte transient messages, auto-ack, "
                    "publishing as fast as the broker takes it",
        perftest_args=("-x", "1", "-y", "1", "-s", "100", "--autoack"),
    ),
    Scenario(
        name="b-1p1c-ack-confirm",
        description="1 producer, 1 consumer, one queue, 100-byte transient messages, manual ack "
                    "with prefetch 100, publisher confirms with at most 1000 unconfirmed",
        perftest_args=("-x", "1", "-y", "1", "-s", "100", "--qos", "100", "--confirm", "1000"),
    ),
)


def find_scenarios(names: list[str]) -> list[Scenario]:
    """The scenarios named (all of them when `names` is empty), in table order."""
    if not names:
        return list(SCENARIOS)
    known = {scenario.name: scenario for scenario in SCENARIOS}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ValueError(f"unknown scenarios {unknown}; known: {sorted(known)}")
    return [scenario for scenario in SCENARIOS if scenario.name in names]
