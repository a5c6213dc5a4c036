"""Real `leveret server` processes forming clusters on loopback with --join.

Leader loss by SIGKILL, a minority cut off by SIGSTOP of the majority, restarts, and
forget_cluster_node; every wait is on a condition, bounded in time.
"""

from __future__ import annotations

import os
import signal

import pika
import pytest

from tests.cluster.processes import Cluster, ClusterNode, running_cluster
from tests.support.node import wait_for

THREE = ["n1@localhost", "n2@localhost", "n3@localhost"]
FIVE = [f"n{number}@localhost" for number in range(1, 6)]


def vhost_names(node: ClusterNode, local: bool = False) -> set[str]:
    return {record["name"] for record in node.metadata("vhosts", local=local)}


def add_vhost(node: ClusterNode, name: str) -> None:
    result = node.submit({"op": "add_vhost", "name": name})
    assert result.code == 0, result.err
    assert result.json()["status"] in ("created", "exists")


def test_three_nodes_form_a_cluster_and_share_metadata() -> None:
    with running_cluster(3) as cluster:
        leader = cluster.wait_leader(THREE)
        follower = next(node for node in cluster.nodes if node.name != leader)
        other = next(node for node in cluster.nodes if node.name not in (leader, follower.name))
        add_vhost(follower, "made-on-a-follower")
        # Read-your-writes on a third node: the ctl read goes through a read barrier.
        assert "made-on-a-follower" in vhost_names(other)

        result = other.ctl("cluster_status", "--formatter", "json")
        assert result.code == 0, result.err
        report = result.json()
        for key in ("running_nodes", "disk_nodes", "partitions", "alarms", "cluster_name"):
            assert key in report
        assert sorted(report["running_nodes"]) == THREE
        assert sorted(report["disk_nodes"]) == THREE
        assert report["raft"]["leader"] == leader
        assert report["raft"]["term"] >= 1 and report["raft"]["commit_index"] >= 1
        assert sorted(report["members"]) == THREE
        table = other.ctl("cluster_status")
        assert table.code == 0 and f"Leader: {leader}" in table.out

        nodes = other.http("GET", "/api/nodes")
        assert sorted(node["name"] for node in nodes) == THREE
        assert all(node["running"] and node["cluster"]["voter"] for node in nodes)
        assert sum(node["cluster"]["leader"] for node in nodes) == 1

        # Every node's Raft role and term, from its gossip report, on any node's /api/nodes.
        def roles() -> dict[str, tuple[str, int]]:
            raft = {
                n["name"]: n["cluster"].get("raft", {}) for n in other.http("GET", "/api/nodes")
            }
            return {name: (r.get("role"), r.get("term")) for name, r in raft.items()}

        term = report["raft"]["term"]
        expected = {name: ("leader" if name == leader else "follower", term) for name in THREE}
        wait_for(lambda: roles() == expected, 10, 0.2)

        # SIGTERM: the leader hands over first, so the next leader takes the very next term.
        assert cluster.node(leader).terminate() == 0
        assert "handed leadership over" in cluster.node(leader).log()
        successor = cluster.node(cluster.wait_leader(THREE, [follower, other], timeout=5))
        assert successor.status()["raft"]["term"] == term + 1


def test_killing_the_leader_elects_another_and_writes_continue() -> None:
    with running_cluster(3) as cluster:
        leader = cluster.node(cluster.wait_leader(THREE))
        leader.kill()
        survivors = cluster.running()
        new_leader = cluster.wait_leader(THREE, survivors)
        assert new_leader != leader.name
        add_vhost(survivors[0], "after-failover")
        assert "after-failover" in vhost_names(survivors[1])
        # Gossip notices the dead node.
        wait_for(lambda: leader.name not in survivors[0].status()["running_nodes"], 20, 0.2)


def _all_quiet(nodes: list[ClusterNode]) -> bool:
    return all(node.status()["raft"]["quiet"] for node in nodes)


def test_an_idle_cluster_goes_quiet_takes_a_write_and_goes_quiet_again() -> None:
    with running_cluster(3) as cluster:
        cluster.wait_leader(THREE)
        wait_for(lambda: _all_quiet(cluster.nodes), 20, 0.1)
        add_vhost(cluster.nodes[2], "while-quiet")
        for node in cluster.nodes:
            wait_for(lambda node=node: "while-quiet" in vhost_names(node, local=True), 10, 0.1)
        wait_for(lambda: _all_quiet(cluster.nodes), 20, 0.1)


def test_a_quiet_leader_that_stops_answering_is_replaced_through_gossip() -> None:
    """SIGSTOP breaks no connection: only the failure detector tells the quiet followers."""
    with running_cluster(3) as cluster:
        leader = cluster.node(cluster.wait_leader(THREE))
        followers = [node for node in cluster.nodes if node is not leader]
        wait_for(lambda: _all_quiet(cluster.nodes), 20, 0.1)
        leader.signal(signal.SIGSTOP)
        try:
            new_leader = cluster.wait_leader(THREE, followers, timeout=30)
            assert new_leader != leader.name
            add_vhost(followers[0], "after-quiet-failover")
        finally:
            leader.signal(signal.SIGCONT)
        cluster.wait_leader(THREE)
        wait_for(lambda: "after-quiet-failover" in vhost_names(leader, local=True), 20, 0.2)


def test_a_read_forwarded_to_a_leader_that_dies_is_asked_of_the_next() -> None:
    with running_cluster(3) as cluster:
        leader = cluster.node(cluster.wait_leader(THREE))
        follower = next(node for node in cluster.nodes if node is not leader)
        assert follower.process is not None
        with pika.BlockingConnection(pika.URLParameters(follower.process.url)) as conn:
            channel = conn.channel()
            channel.queue_declare("read-barrier", durable=True)
            leader.kill()
            # A redeclare waits until the follower's view is current: the read it forwarded to
            # the leader is asked again of the next one, within the declare's time.
            assert channel.queue_declare("read-barrier", durable=True).method.queue


def test_a_minority_cannot_change_metadata_and_says_why() -> None:
    with running_cluster(3) as cluster:
        leader = cluster.node(cluster.wait_leader(THREE))
        followers = [node for node in cluster.nodes if node is not leader]
        # The old leader is left alone: it must notice that it lost its majority.
        for node in followers:
            node.signal(signal.SIGSTOP)
        try:
            wait_for(lambda: leader.status()["raft"]["role"] != "leader", 10, 0.2)
            refused = leader.submit({"op": "add_vhost", "name": "minority-write"})
            assert refused.code != 0
            assert "no quorum" in refused.err and "1 of 3 members" in refused.err, refused.err
        finally:
            for node in followers:
                node.signal(signal.SIGCONT)
        cluster.wait_leader(THREE)
        add_vhost(leader, "after-healing")
        assert "minority-write" not in vhost_names(followers[0])
        assert "after-healing" in vhost_names(followers[1])


def test_a_follower_cut_off_from_the_majority_refuses_changes() -> None:
    with running_cluster(3) as cluster:
        leader = cluster.node(cluster.wait_leader(THREE))
        alone = next(node for node in cluster.nodes if node is not leader)
        majority = [node for node in cluster.nodes if node is not alone]
        for node in majority:
            node.signal(signal.SIGSTOP)
        try:
            wait_for(lambda: alone.status()["raft"]["leader"] is None, 10, 0.2)
            refused = alone.submit({"op": "add_vhost", "name": "minority-write"})
            assert refused.code != 0
            assert "no quorum" in refused.err and "no leader" in refused.err, refused.err
        finally:
            for node in majority:
                node.signal(signal.SIGCONT)
        cluster.wait_leader(THREE)
        assert "minority-write" not in vhost_names(alone)


def test_a_killed_node_restarted_later_catches_up() -> None:
    with running_cluster(3) as cluster:
        leader = cluster.node(cluster.wait_leader(THREE))
        lagging = next(node for node in cluster.nodes if node is not leader)
        lagging.kill()
        names = [f"while-down-{number}" for number in range(20)]
        for name in names:
            add_vhost(leader, name)
        lagging.start()  # new ports: the others learn its address when it speaks
        wait_for(lambda: set(names) <= vhost_names(lagging, local=True), 30, 0.2)
        assert lagging.status()["raft"]["leader"] is not None


def test_the_whole_cluster_restarted_keeps_its_metadata() -> None:
    with running_cluster(3) as cluster:
        leader = cluster.node(cluster.wait_leader(THREE))
        add_vhost(leader, "survives-restart")
        for node in cluster.nodes:
            assert node.terminate() == 0
        for node in cluster.nodes:
            node.start(same_ports=True)
        cluster.wait_leader(THREE)
        for node in cluster.nodes:
            assert "survives-restart" in vhost_names(node)


def test_a_forgotten_node_stays_out() -> None:
    with running_cluster(3) as cluster:
        leader = cluster.node(cluster.wait_leader(THREE))
        gone = cluster.nodes[2] if cluster.nodes[2] is not leader else cluster.nodes[1]
        assert gone.terminate() == 0
        result = leader.ctl("forget_cluster_node", gone.name)
        assert result.code == 0, result.err
        remaining = sorted(node.name for node in cluster.nodes if node is not gone)
        cluster.wait_leader(remaining, [node for node in cluster.nodes if node is not gone])
        assert gone.name not in leader.status()["members"]

        gone.start(join=[leader.seed])
        wait_for(lambda: "removed" in gone.log(), 20, 0.2)
        add_vhost(leader, "without-the-forgotten")
        status = leader.status()
        assert gone.name not in status["disk_nodes"] and gone.name not in status["raft"]["voters"]
        refused = gone.submit({"op": "add_vhost", "name": "from-outside"})
        assert refused.code != 0
        assert "from-outside" not in vhost_names(leader)
        again = leader.ctl("forget_cluster_node", gone.name)
        assert again.code == 69 and "not in the cluster" in again.err


def test_five_nodes_survive_losing_two() -> None:
    with running_cluster(5) as cluster:
        leader = cluster.node(cluster.wait_leader(FIVE))
        leader.kill()
        another = next(node for node in cluster.running())
        another.kill()
        survivors = cluster.running()
        assert len(survivors) == 3
        cluster.wait_leader(FIVE, survivors)
        add_vhost(survivors[0], "three-of-five")
        assert "three-of-five" in vhost_names(survivors[2])


def test_a_node_with_another_secret_is_refused(tmp_path: os.PathLike[str]) -> None:
    cluster = Cluster(1)
    try:
        cluster.form()
        seed = cluster.nodes[0]
        other_secret = os.path.join(str(tmp_path), "other-secret")
        with open(other_secret, "w") as file:
            file.write("not the cluster's secret\n")
        intruder = ClusterNode("intruder@localhost", other_secret, [seed.seed])
        cluster.nodes.append(intruder.start())
        wait_for(lambda: "rejected an unauthenticated cluster call" in seed.log(), 20, 0.2)
        wait_for(lambda: "refused our cluster credentials" in intruder.log(), 20, 0.2)
        assert seed.status()["raft"]["voters"] == ["n1@localhost"]
    finally:
        cluster.cleanup()


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("LEVERET_SLOW") != "1", reason="slow: set LEVERET_SLOW=1")
def test_repeated_leader_kills_keep_metadata_consistent() -> None:
    with running_cluster(5) as cluster:
        written: list[str] = []
        for round_ in range(6):
            leader = cluster.node(cluster.wait_leader(FIVE, timeout=30))
            for number in range(10):
                name = f"round-{round_}-{number}"
                add_vhost(leader, name)
                written.append(name)
            leader.kill()
            survivors = cluster.running()
            cluster.wait_leader(FIVE, survivors, timeout=30)
            leader.start()
        for node in cluster.nodes:
            wait_for(lambda: set(written) <= vhost_names(node), 30, 0.2)  # noqa: B023
