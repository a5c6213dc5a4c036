"""One seed for every node, as a StatefulSet gives each pod: the node it names starts the
cluster, the others join it, whatever order they start in, and a restarted node rejoins."""

from __future__ import annotations

import threading

from tests.cluster.processes import Cluster, ClusterNode
from tests.support.node import wait_for
from tests.support.ports import restartable_ports


def test_every_node_given_the_same_seed_forms_one_cluster_in_any_order() -> None:
    cluster = Cluster(3)
    [seed_port] = restartable_ports(1)
    seed = f"localhost:{seed_port}"
    first, second, third = (
        ClusterNode(f"n{number}@localhost", cluster.secret_file, [seed]) for number in (1, 2, 3)
    )
    first.cluster_port = seed_port  # n1 listens where the seed points
    cluster.nodes = [first, second, third]
    try:
        # The joiners start first: they wait for the seed, which comes up last.
        joiners = [threading.Thread(target=node.start) for node in (third, second)]
        for thread in joiners:
            thread.start()
        first.start(same_ports=True)
        for thread in joiners:
            thread.join(60)
        names = sorted(node.name for node in cluster.nodes)
        for node in cluster.nodes:
            wait_for(lambda node=node: sorted(node.status()["running_nodes"]) == names, 30, 0.1)
        assert cluster.wait_leader(names)
        # The seed node itself restarts with its data: it rejoins, it does not start anew.
        first.kill()
        first.start(same_ports=True)
        wait_for(lambda: sorted(first.status()["running_nodes"]) == names, 30, 0.1)
        assert sorted(first.status()["disk_nodes"]) == names
    except BaseException:
        print(cluster.logs())
        raise
    finally:
        cluster.cleanup()
