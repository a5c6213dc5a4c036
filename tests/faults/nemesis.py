"""The faults a round can inject: each starts a fault, and its end puts every node and link back."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from tests.faults.netlab import NetLab
from tests.faults.nodes import LabCluster, LabNode


@dataclass
class Fault:
    """A fault in progress: what it is, and how to end it."""

    description: str
    end: Callable[[], None]


Nemesis = Callable[[NetLab, LabCluster, random.Random], Fault]


def _names(cluster: LabCluster, indexes: list[int]) -> str:
    return ",".join(cluster.nodes[i].name.split("@")[0] for i in indexes)


def kill(lab: NetLab, cluster: LabCluster, rng: random.Random) -> Fault:
    victim = rng.choice(cluster.nodes)
    victim.kill()
    return Fault(f"SIGKILL {victim.name}", lambda: cluster.start(victim))


def pause(lab: NetLab, cluster: LabCluster, rng: random.Random) -> Fault:
    victim = rng.choice(cluster.nodes)
    victim.pause()
    return Fault(f"SIGSTOP {victim.name}", victim.resume)


def _partition(lab: NetLab, groups: list[list[int]], cluster: LabCluster, kind: str) -> Fault:
    lab.partition(groups)
    shown = " | ".join(_names(cluster, group) for group in groups)
    return Fault(f"partition {kind}: {shown}", lab.heal)


def random_halves(lab: NetLab, cluster: LabCluster, rng: random.Random) -> Fault:
    indexes = list(range(lab.size))
    rng.shuffle(indexes)
    half = lab.size // 2
    return _partition(lab, [indexes[:half], indexes[half:]], cluster, "halves")


def isolate_one(lab: NetLab, cluster: LabCluster, rng: random.Random) -> Fault:
    alone = rng.randrange(lab.size)
    rest = [i for i in range(lab.size) if i != alone]
    return _partition(lab, [[alone], rest], cluster, "isolated")


def majorities_ring(lab: NetLab, cluster: LabCluster, rng: random.Random) -> Fault:
    """Each node sees a majority (itself and its neighbours on a shuffled ring), and no two
    nodes see the same one. With three nodes, one link is cut: two nodes see two of three."""
    ring = list(range(lab.size))
    rng.shuffle(ring)
    reach = (lab.size // 2 + 1) // 2
    if lab.size < 5:
        groups = [[ring[0], ring[1]], ring[1:]]
    else:
        groups = [
            [ring[(position + step) % lab.size] for step in range(-reach, reach + 1)]
            for position in range(lab.size)
        ]
    lab.partition(groups)
    return Fault(f"partition majorities ring {_names(cluster, ring)}", lab.heal)


def bridge(lab: NetLab, cluster: LabCluster, rng: random.Random) -> Fault:
    """Two halves that cannot see each other, and one node that sees both."""
    indexes = list(range(lab.size))
    rng.shuffle(indexes)
    middle, rest = indexes[0], indexes[1:]
    half = len(rest) // 2
    return _partition(lab, [[*rest[:half], middle], [middle, *rest[half:]]], cluster, "bridge")


def slow_links(lab: NetLab, cluster: LabCluster, rng: random.Random) -> Fault:
    delay, rate = rng.choice((20, 50, 100)), rng.choice((256, 1024))
    lab.slow(delay, rate)
    how = f"{delay} ms delay, {rate} kbit/s" if lab.netem else f"{rate} kbit/s"
    return Fault(f"slow node-to-node links ({how})", lab.heal)


def lossy_links(lab: NetLab, cluster: LabCluster, rng: random.Random) -> Fault:
    loss = rng.choice((0.05, 0.2, 0.4))
    lab.lossy(loss)
    return Fault(f"lossy node-to-node links ({loss:.0%} dropped)", lab.heal)


def power_cut(lab: NetLab, cluster: LabCluster, rng: random.Random) -> Fault:
    """Every node SIGKILLed at once; they come back in a random order."""
    for node in cluster.nodes:
        node.kill()

    order = list(cluster.nodes)
    rng.shuffle(order)
    return Fault(f"power cut, restart order {_order(order)}", lambda: _restart(cluster, order, rng))


def rolling_restart(lab: NetLab, cluster: LabCluster, rng: random.Random) -> Fault:
    """Each node in turn, in a random order, SIGKILLed and started again."""
    order = list(cluster.nodes)
    rng.shuffle(order)
    for node in order:
        node.kill()
        time.sleep(rng.uniform(0.1, 0.5))
        cluster.start(node)
        node.wait_started()
    return Fault(f"restarts in order {_order(order)}", lambda: None)


def _order(nodes: list[LabNode]) -> str:
    return ",".join(node.name.split("@")[0] for node in nodes)


def _restart(cluster: LabCluster, order: list[LabNode], rng: random.Random) -> None:
    for node in order:
        cluster.start(node)
        time.sleep(rng.uniform(0.0, 0.5))


NEMESES: dict[str, Nemesis] = {
    "kill": kill,
    "pause": pause,
    "halves": random_halves,
    "isolate": isolate_one,
    "ring": majorities_ring,
    "bridge": bridge,
    "slow": slow_links,
    "lossy": lossy_links,
    "power-cut": power_cut,
    "restarts": rolling_restart,
}
PARTITIONS = ("halves", "isolate", "ring", "bridge")
