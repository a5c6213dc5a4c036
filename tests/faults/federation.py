"""The federation workload: a queue link between two brokers in namespaces of their own, under
seeded faults of the link and of both ends; every confirmed integer comes out, downstream or
left upstream, and every repeat is marked."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import pika

from tests.faults import nemesis
from tests.faults.harness import HEAL_SECONDS, schedule, sigterm_unwinds, wait_drained
from tests.faults.nemesis import Fault, Nemesis
from tests.faults.netlab import NetLab
from tests.faults.nodes import AMQP_PORT, LabCluster, LabNode
from tests.faults.total_queue import TotalQueue, Verdict

UPSTREAM, DOWNSTREAM = 0, 1
QUEUE = "federated"
_UPSTREAM_NAME = "origin"
_POLICY = "federate"
# The link notices a dead peer after two missed heartbeats: a cut of a few seconds breaks its
# connection (what is unacknowledged upstream comes again), rather than only stalling it.
_LINK_HEARTBEAT = 1
_SETTLE_SECONDS = 30.0


class SeparateBrokers(LabCluster):
    """One single-node broker per namespace, none joining another: the upstream and the
    downstream of a link. Healthy once each answers and the downstream's link runs."""

    def __init__(self, lab: NetLab) -> None:
        super().__init__(lab)
        self.federated = False  # set once the link is configured: healthy waits for it then

    def join_list(self, node: LabNode) -> list[str]:
        return []

    def healthy(self) -> str | None:
        for node in self.nodes:
            if node.status() is None:
                return f"{node.name} does not answer"
        if self.federated:
            link = link_of(self.nodes[DOWNSTREAM])
            if link is None or link.get("status") != "running":
                return f"the link is {link and link.get('status')}: {link and link.get('error')}"
        return None


def link_of(node: LabNode) -> dict[str, Any] | None:
    try:
        links = node.http("GET", "/api/federation-links")
    except (OSError, ValueError):
        return None
    found = [link for link in links if link["queue"] == QUEUE]
    return dict(found[0]) if found else None


def federate(brokers: SeparateBrokers, ack_mode: str, prefetch: int) -> None:
    """The downstream's upstream parameter (the upstream node's address on the bridge) and the
    policy that applies it to the queue."""
    upstream, downstream = brokers.nodes[UPSTREAM], brokers.nodes[DOWNSTREAM]
    uri = f"amqp://guest:guest@{upstream.address}:{AMQP_PORT}/%2F?heartbeat={_LINK_HEARTBEAT}"
    value = {"uri": uri, "ack-mode": ack_mode, "prefetch-count": prefetch, "reconnect-delay": 1}
    downstream.http(
        "PUT", f"/api/parameters/federation-upstream/%2F/{_UPSTREAM_NAME}", body={"value": value}
    )
    policy = {
        "pattern": f"^{QUEUE}$",
        "definition": {"federation-upstream": _UPSTREAM_NAME},
        "apply-to": "queues",
    }
    downstream.http("PUT", f"/api/policies/%2F/{_POLICY}", body=policy)
    brokers.federated = True


def declare(node: LabNode) -> None:
    with pika.BlockingConnection(pika.URLParameters(node.url)) as connection:
        connection.channel().queue_declare(QUEUE, durable=True)


def unfederate(brokers: SeparateBrokers) -> None:
    """Remove the policy and wait until the link is gone and the upstream holds nothing for
    it: what the link had unacknowledged is back in the upstream queue, to be drained there."""
    upstream, downstream = brokers.nodes[UPSTREAM], brokers.nodes[DOWNSTREAM]
    brokers.federated = False
    downstream.http("DELETE", f"/api/policies/%2F/{_POLICY}")
    deadline = time.monotonic() + _SETTLE_SECONDS
    while link_of(downstream) is not None or _unacknowledged(upstream) != 0:
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"the link did not let go in {_SETTLE_SECONDS}s: {link_of(downstream)}, "
                f"{_unacknowledged(upstream)} unacknowledged upstream"
            )
        time.sleep(0.2)


def _unacknowledged(node: LabNode) -> int | None:
    try:
        return int(node.http("GET", f"/api/queues/%2F/{quote(QUEUE)}")["messages_unacknowledged"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


# --- faults of the link and of its ends -------------------------------------------------------


def cut_link(lab: NetLab, brokers: LabCluster, rng: random.Random) -> Fault:
    """The link's packets dropped both ways; the clients still reach both brokers."""
    lab.cut(UPSTREAM, DOWNSTREAM)
    return Fault("partition the link: upstream | downstream", lab.heal)


def _kill(index: int, role: str) -> Nemesis:
    def strike(lab: NetLab, brokers: LabCluster, rng: random.Random) -> Fault:
        victim = brokers.nodes[index]
        victim.kill()
        return Fault(f"SIGKILL the {role}", lambda: brokers.start(victim))

    return strike


def _pause(index: int, role: str) -> Nemesis:
    def strike(lab: NetLab, brokers: LabCluster, rng: random.Random) -> Fault:
        victim = brokers.nodes[index]
        victim.pause()
        return Fault(f"SIGSTOP the {role}", victim.resume)

    return strike


NEMESES: dict[str, Nemesis] = {
    "link": cut_link,
    "slow": nemesis.slow_links,
    "lossy": nemesis.lossy_links,
    "kill-downstream": _kill(DOWNSTREAM, "downstream (the link's node)"),
    "pause-downstream": _pause(DOWNSTREAM, "downstream (the link's node)"),
    "kill-upstream": _kill(UPSTREAM, "upstream"),
    "pause-upstream": _pause(UPSTREAM, "upstream"),
    "power-cut": nemesis.power_cut,
}
# on-publish acknowledges upstream before the downstream's disk has the message: a downstream
# crash may lose what it held (as with RabbitMQ), so those rounds spare the downstream's life.
ON_PUBLISH_NEMESES = (
    "link", "slow", "lossy", "pause-downstream", "kill-upstream", "pause-upstream",
)  # fmt: skip


@dataclass
class FederationReport:
    seed: int
    ack_mode: str
    prefetch: int
    rounds: list[str] = field(default_factory=list)
    heal_seconds: list[float] = field(default_factory=list)
    verdict: Verdict | None = None
    publish_outcomes: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return bool(self.verdict and self.verdict.ok)

    def summary(self) -> str:
        lines = [
            f"seed {self.seed}: {len(self.rounds)} fault rounds, ack-mode {self.ack_mode}, "
            f"prefetch-count {self.prefetch}"
        ]
        lines += [f"  round {i + 1}: {text}" for i, text in enumerate(self.rounds)]
        if self.heal_seconds:
            lines.append(
                f"  link running again within {max(self.heal_seconds):.1f} s of each fault's "
                f"end (mean {sum(self.heal_seconds) / len(self.heal_seconds):.1f} s)"
            )
        if self.verdict is not None:
            lines.append(f"  total queue: {self.verdict.summary()}")
            outcomes = ", ".join(f"{n} {what}" for what, n in sorted(self.publish_outcomes.items()))
            lines.append(f"    publishes: {outcomes}")
        return "\n".join(lines)


def run(
    seed: int,
    rounds: int,
    nemeses: Sequence[str] = tuple(NEMESES),
    ack_mode: str = "on-confirm",
    fault_seconds: tuple[float, float] = (2.0, 5.0),
    log: bool = True,
) -> FederationReport:
    """One run: producers publish to the upstream queue, consumers take from the downstream
    one; after the rounds, everything is drained from both and counted."""

    def say(text: str) -> None:
        if log:
            print(text, flush=True)

    for noisy in ("aiormq", "aio_pika"):
        logging.getLogger(noisy).setLevel(logging.CRITICAL)
    rng = random.Random(seed)
    report = FederationReport(seed, ack_mode, rng.choice((20, 200, 1000)))
    say(f"federation fault harness seed {seed}: {rounds} rounds, {ack_mode}")
    with sigterm_unwinds():
        lab = NetLab(2).build()
        brokers: SeparateBrokers | None = None
        try:
            brokers = SeparateBrokers(lab)
            brokers.form()
            urls = [node.url for node in brokers.nodes]
            workload = TotalQueue(
                urls,
                {QUEUE: UPSTREAM},
                seed,
                producers=[UPSTREAM, UPSTREAM],
                consumers=[(DOWNSTREAM, QUEUE), (DOWNSTREAM, QUEUE)],
                drains=[(QUEUE, DOWNSTREAM), (QUEUE, UPSTREAM)],
            )
            federate(brokers, ack_mode, report.prefetch)
            declare(brokers.nodes[DOWNSTREAM])
            workload.start()  # declares the upstream queue
            try:
                for number, name in enumerate(schedule(seed, rounds, nemeses), 1):
                    time.sleep(rng.uniform(0.5, 1.5))
                    fault = NEMESES[name](lab, brokers, rng)
                    say(f"round {number}: {fault.description}")
                    report.rounds.append(fault.description)
                    time.sleep(rng.uniform(*fault_seconds))
                    fault.end()
                    healed = brokers.wait_healthy(HEAL_SECONDS)
                    report.heal_seconds.append(healed)
                    say(f"  link running again in {healed:.1f} s")
                workload.stop_publishing()
                wait_drained(workload)
                report.verdict = workload.finish(before_sweep=lambda: unfederate(brokers))
                report.publish_outcomes = dict(workload.history.outcomes)
            except BaseException:
                workload.abandon()
                raise
        except BaseException:
            if brokers is not None:
                say(brokers.logs())
            raise
        finally:
            if brokers is not None:
                brokers.cleanup()
            lab.teardown()
    say(report.summary())
    return report
