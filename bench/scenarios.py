"""The side-by-side scenarios: named perftest parameter sets. Add a scenario by adding a row."""

from __future__ import annotations

from dataclasses import dataclass

PERFTEST = "perftest"  # a timed perftest run
BACKLOG = "backlog"  # a perftest fill of -C messages, then a restart of the broker (bench.backlog)


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    perftest_args: tuple[str, ...]  # perftest flags, without --uri, -z and --warmup
    kind: str = PERFTEST


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
    Scenario(
        name="c-persistent-100b",
        description="as (b) with persistent messages in a durable queue: 100-byte messages, "
        "confirmed once on disk",
        perftest_args=(
            "-x",
            "1",
            "-y",
            "1",
            "-s",
            "100",
            "--qos",
            "100",
            "--confirm",
            "1000",
            "--durable",
            "-f",
            "persistent",
        ),
    ),
    Scenario(
        name="d-persistent-4k",
        description="as (c) with 4 KiB messages (at the size both brokers move bodies out of the "
        "queue's own files into a shared store)",
        perftest_args=(
            "-x",
            "1",
            "-y",
            "1",
            "-s",
            "4096",
            "--qos",
            "100",
            "--confirm",
            "1000",
            "--durable",
            "-f",
            "persistent",
        ),
    ),
    Scenario(
        name="e-backlog-1m-restart",
        description="1,000,000 persistent 100-byte messages published with confirms (at most "
        "1000 unconfirmed) into one durable queue, no consumer; then memory, and a "
        "restart (SIGTERM, start again) timed until that queue is served",
        perftest_args=(
            "-x",
            "1",
            "-y",
            "0",
            "-s",
            "100",
            "--confirm",
            "1000",
            "--durable",
            "-f",
            "persistent",
            "-C",
            "1000000",
            "-u",
            "leveret-bench-backlog",
            "--keep-queue",
        ),
        kind=BACKLOG,
    ),
    Scenario(
        name="f-fanout-16k-10q",
        description="1 producer to a fanout exchange bound to 10 durable queues, one consumer "
        "each (manual ack, prefetch 100), 16 KiB persistent messages, confirms "
        "with at most 1000 unconfirmed; msg/s counts deliveries (10 per message "
        "published), disk bytes are per message published",
        perftest_args=(
            "-x",
            "1",
            "-y",
            "10",
            "-s",
            "16384",
            "--qos",
            "100",
            "--confirm",
            "1000",
            "--durable",
            "-f",
            "persistent",
            "-e",
            "leveret-bench-fanout",
            "-t",
            "fanout",
            "--queue-pattern",
            "leveret-bench-fanout-%d",
            "--queue-pattern-from",
            "1",
            "--queue-pattern-to",
            "10",
        ),
    ),
    Scenario(
        name="g-priority-5",
        description="as (b) on a priority queue (x-max-priority 5), each message with a random "
        "priority from 0 to 5",
        perftest_args=(
            "-x",
            "1",
            "-y",
            "1",
            "-s",
            "100",
            "--qos",
            "100",
            "--confirm",
            "1000",
            "--queue-args",
            "x-max-priority=5",
            "--random-priority",
            "5",
        ),
    ),
    Scenario(
        name="h-max-length-drop-head",
        description="1 producer, no consumer, a queue limited to 1000 messages (x-max-length, "
        "overflow drop-head: the oldest are dropped), 100-byte transient messages, "
        "confirms with at most 1000 unconfirmed; msg/s is the confirmed rate",
        perftest_args=(
            "-x",
            "1",
            "-y",
            "0",
            "-s",
            "100",
            "--confirm",
            "1000",
            "--queue-args",
            "x-max-length=1000",
        ),
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
