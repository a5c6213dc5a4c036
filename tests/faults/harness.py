"""A seeded run: a cluster in namespaces, the workloads through every node, rounds of faults,
then healing, draining and judging. `python -m tests.faults --seed N` replays a run."""

from __future__ import annotations

import logging
import random
import signal
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType

from cluster.metadata.linearizability import CheckResult, Operation, check_history
from tests.faults.metadata import AmqpQueueModel, MetadataClients
from tests.faults.nemesis import NEMESES
from tests.faults.netlab import NetLab
from tests.faults.nodes import LabCluster
from tests.faults.total_queue import TotalQueue, Verdict

HEAL_SECONDS = 60.0
DRAIN_SECONDS = 120.0


@dataclass
class Report:
    seed: int
    rounds: list[str] = field(default_factory=list)
    heal_seconds: list[float] = field(default_factory=list)
    verdict: Verdict | None = None
    metadata: CheckResult | None = None
    metadata_operations: int = 0
    metadata_unknown: int = 0
    refusals: dict[str, int] = field(default_factory=dict)
    publish_outcomes: dict[str, int] = field(default_factory=dict)
    netem: bool = False

    @property
    def ok(self) -> bool:
        return bool(self.verdict and self.verdict.ok and self.metadata and self.metadata.ok)

    def summary(self) -> str:
        partitions = sum(1 for text in self.rounds if text.startswith("partition"))
        lines = [f"seed {self.seed}: {len(self.rounds)} fault rounds ({partitions} partitions)"]
        lines += [f"  round {i + 1}: {text}" for i, text in enumerate(self.rounds)]
        if self.heal_seconds:
            lines.append(
                f"  healed within {max(self.heal_seconds):.1f} s of each fault's end "
                f"(mean {sum(self.heal_seconds) / len(self.heal_seconds):.1f} s)"
            )
        if self.verdict is not None:
            lines.append(f"  total queue: {self.verdict.summary()}")
            outcomes = ", ".join(f"{n} {what}" for what, n in sorted(self.publish_outcomes.items()))
            lines.append(f"    publishes: {outcomes}")
        if self.metadata is not None:
            key = self.metadata.key
            state = "linearizable" if self.metadata.ok else f"NOT linearizable ({key})"
            lines.append(
                f"  metadata: {self.metadata_operations} operations "
                f"({self.metadata_unknown} with unknown outcome): {state}"
            )
            lines += [f"    {count} x {text}" for text, count in sorted(self.refusals.items())]
            if not self.metadata.ok:
                lines += _history_lines(self.metadata.operations)
        return "\n".join(lines)


def _history_lines(operations: Sequence[Operation]) -> list[str]:
    """A failing key's history, in invocation order, times relative to its first operation."""
    start = min(op.invoked_at for op in operations)
    lines = []
    for op in sorted(operations, key=lambda op: op.invoked_at):
        returned = "?" if op.returned_at is None else f"{op.returned_at - start:8.3f}"
        lines.append(
            f"    {op.client} {op.invoked_at - start:8.3f} .. {returned} {op.input} -> {op.output}"
        )
    return lines


@contextmanager
def sigterm_unwinds() -> Iterator[None]:
    """SIGTERM and SIGINT unwind as Ctrl-C does, so that the host is put back (main thread
    only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    # SIGINT too: a shell starts background jobs with SIGINT ignored, which Python keeps.
    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def schedule(seed: int, rounds: int, nemeses: Sequence[str]) -> list[str]:
    """The nemesis of each round: every one of `nemeses` in turn, in a seeded order."""
    rng = random.Random(seed)
    order: list[str] = []
    while len(order) < rounds:
        batch = list(nemeses)
        rng.shuffle(batch)
        order += batch
    return order[:rounds]


def run(
    seed: int,
    rounds: int,
    size: int = 3,
    nemeses: Sequence[str] = tuple(NEMESES),
    fault_seconds: tuple[float, float] = (2.0, 5.0),
    log: bool = True,
) -> Report:
    """One run; the report says what happened (the seed first, so that a failure replays)."""

    def say(text: str) -> None:
        if log:
            print(text, flush=True)

    say(f"fault harness seed {seed}: {rounds} rounds on {size} nodes")
    # The clients' libraries log every refused connection; the run's own lines say enough.
    for noisy in ("aiormq", "aio_pika"):
        logging.getLogger(noisy).setLevel(logging.CRITICAL)
    report = Report(seed)
    rng = random.Random(seed)
    with sigterm_unwinds():
        lab = NetLab(size).build()
        report.netem = lab.netem
        cluster: LabCluster | None = None
        try:
            cluster = LabCluster(lab)
            cluster.form()
            queues = {f"total-n{i + 1}": i for i in range(size)}
            urls = [node.url for node in cluster.nodes]
            workload = TotalQueue(urls, queues, seed)
            metadata = MetadataClients(urls, seed + 1)
            workload.start()
            workload.call(metadata.spawn())
            try:
                for number, name in enumerate(schedule(seed, rounds, nemeses), 1):
                    time.sleep(rng.uniform(0.5, 1.5))
                    fault = NEMESES[name](lab, cluster, rng)
                    say(f"round {number}: {fault.description}")
                    report.rounds.append(fault.description)
                    time.sleep(rng.uniform(*fault_seconds))
                    fault.end()
                    healed = cluster.wait_healthy(HEAL_SECONDS)
                    report.heal_seconds.append(healed)
                    metadata.next_round()
                    say(f"  healed in {healed:.1f} s")
                workload.call(metadata.stop(), 60)
                workload.stop_publishing()
                wait_drained(workload)
                report.verdict = workload.finish()
                report.publish_outcomes = dict(workload.history.outcomes)
            except BaseException:
                workload.abandon()
                raise
            report.metadata_operations = len(metadata.history)
            report.metadata_unknown = sum(1 for op in metadata.history if not op.known)
            report.refusals = dict(metadata.refusals)
            report.metadata = check_history(metadata.history, AmqpQueueModel())
        except BaseException:
            if cluster is not None:
                say(cluster.logs())
            raise
        finally:
            if cluster is not None:
                cluster.cleanup()
            lab.teardown()
    say(report.summary())
    return report


def wait_drained(workload: TotalQueue) -> None:
    """Until the queues are empty and consumers got nothing new for a while."""
    deadline = time.monotonic() + DRAIN_SECONDS
    seen, quiet_since = workload.deliveries_seen(), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now_seen = workload.deliveries_seen()
        if now_seen != seen:
            seen, quiet_since = now_seen, time.monotonic()
        elif time.monotonic() - quiet_since > 3 and workload.remaining() == 0:
            return
    raise RuntimeError(f"the queues did not drain in {DRAIN_SECONDS}s")


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--nemesis", action="append", choices=sorted(NEMESES))
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.randrange(2**31)
    report = run(seed, args.rounds, args.nodes, args.nemesis or tuple(NEMESES))
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
