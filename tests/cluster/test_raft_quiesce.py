"""Quiescence (RaftConfig.quiesce): an idle group stops heartbeating, and wakes when needed."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from cluster.metadata_machine import MetadataMachine
from cluster.node_loop import LoopSettings, RaftLoop
from cluster.raft import (
    FileStorage,
    Heartbeat,
    HeartbeatResponse,
    ProposalRejected,
    RaftConfig,
    RequestVote,
    Role,
)
from tests.cluster.raft_harness import Cluster

QUIET = RaftConfig(election_tick=10, heartbeat_tick=2, quiesce=True)
MEMBERS = ["a", "b", "c"]


def _quiet_cluster() -> Cluster:
    """Three nodes, `a` leading, one command committed everywhere, and the group quiet."""
    cluster = Cluster(MEMBERS, QUIET)
    cluster.elect("a")
    cluster.propose("a", b"x")
    cluster.deliver()
    cluster.tick_all(4)
    assert all(node.quiet for node in cluster.nodes.values())
    return cluster


def test_an_idle_group_goes_quiet_and_then_sends_nothing() -> None:
    cluster = _quiet_cluster()
    for node in cluster.nodes.values():
        assert node.commit_index == cluster.nodes["a"].last_index
        assert node.idle_ticks() > 100
    for _ in range(200):
        for node_id in MEMBERS:
            cluster.tick(node_id)
        assert cluster.outbox == []
    assert cluster.leaders() == ["a"]
    assert cluster.nodes["a"].status().quiet


def test_without_the_option_heartbeats_never_stop() -> None:
    cluster = Cluster(MEMBERS, RaftConfig(election_tick=10, heartbeat_tick=2))
    cluster.elect("a")
    cluster.tick_all(10)
    cluster.tick("a", 2)
    assert any(isinstance(m, Heartbeat) for m in cluster.outbox)
    assert not any(node.quiet for node in cluster.nodes.values())


def test_a_proposal_wakes_the_group_and_it_goes_quiet_again_once_committed() -> None:
    cluster = _quiet_cluster()
    cluster.propose("a", b"y")
    assert not cluster.nodes["a"].quiet
    cluster.deliver()
    assert not cluster.nodes["b"].quiet and not cluster.nodes["c"].quiet
    cluster.tick_all(4)
    assert all(node.quiet for node in cluster.nodes.values())
    assert [e.data for e in cluster.applied["c"]][-1] == b"y"


def test_a_follower_goes_quiet_only_once_it_knows_the_whole_log_committed() -> None:
    cluster = Cluster(MEMBERS, QUIET)
    cluster.elect("a")
    cluster.tick_all(2)
    cluster.propose("a", b"x")
    # c never gets the commit of x: the leader may not go quiet, and heartbeats go on.
    cluster.deliver(keep=lambda m: not (m.src == "a" and m.dst == "c"))
    cluster.tick("a", 2)
    cluster.deliver(keep=lambda m: "c" not in (m.src, m.dst))
    assert not cluster.nodes["a"].quiet
    cluster.tick_all(6)
    assert all(node.quiet for node in cluster.nodes.values())
    assert cluster.nodes["c"].commit_index == cluster.nodes["a"].last_index


def test_an_answer_at_an_older_commit_does_not_count_towards_the_quiet() -> None:
    cluster = _quiet_cluster()
    leader = cluster.nodes["a"]
    stale = HeartbeatResponse("b", "a", leader.term, 0, quiet_at=leader.commit_index)
    cluster.propose("a", b"y")
    cluster.deliver()
    current = HeartbeatResponse("c", "a", leader.term, 0, quiet_at=leader.commit_index)
    cluster.call("a", lambda node: node.step(current))
    cluster.call("a", lambda node: node.step(stale))
    assert not leader.quiet


def test_a_follower_missing_entries_answers_a_quiescing_heartbeat_without_going_quiet() -> None:
    cluster = _quiet_cluster()
    follower = cluster.nodes["b"]
    beyond = follower.last_index + 3
    ready = cluster.call(
        "b", lambda node: node.step(Heartbeat("a", "b", node.term, beyond, 0, quiesce=True))
    )
    assert not follower.quiet
    assert [m.quiet_at for m in ready.messages if isinstance(m, HeartbeatResponse)] == [0]


def test_a_suspected_leader_loses_its_quiet_followers_who_elect_another() -> None:
    cluster = _quiet_cluster()
    cluster.cut.add("a")
    cluster.tick_all(200)
    assert cluster.leaders() == ["a"], "no heartbeats, no timeout: the followers wait"
    for node_id in ("b", "c"):
        cluster.call(node_id, lambda node: node.peer_lost("a"))
    cluster.tick_all(25)
    leaders = [node_id for node_id in cluster.leaders() if node_id != "a"]
    assert len(leaders) == 1
    new = cluster.nodes[leaders[0]]
    assert new.term > cluster.nodes["a"].term


def test_one_follower_suspecting_the_leader_is_enough_when_the_other_is_told_too() -> None:
    """Only b's detector fires at first: c, still quiet, keeps its lease and refuses b; once
    c's detector fires as well, b wins."""
    cluster = _quiet_cluster()
    cluster.cut.add("a")
    cluster.call("b", lambda node: node.peer_lost("a"))
    cluster.tick_all(40)
    assert cluster.nodes["b"].role is not Role.LEADER
    assert cluster.nodes["c"].quiet
    cluster.call("c", lambda node: node.peer_lost("a"))
    cluster.tick_all(40)
    assert len([n for n in cluster.leaders() if n != "a"]) == 1


def test_a_quiet_leader_cut_off_from_the_rest_steps_down_once_it_suspects_them() -> None:
    cluster = _quiet_cluster()
    cluster.cut.add("a")
    cluster.call("a", lambda node: node.peer_lost("b"))
    assert not cluster.nodes["a"].quiet
    cluster.tick("a", 2 * QUIET.election_tick)
    assert cluster.nodes["a"].role is Role.FOLLOWER


def test_a_false_suspicion_costs_one_round_and_the_leader_stays() -> None:
    cluster = _quiet_cluster()
    term = cluster.nodes["a"].term
    cluster.call("b", lambda node: node.peer_lost("a"))
    cluster.tick_all(40)
    assert cluster.leaders() == ["a"]
    assert cluster.nodes["a"].term == term
    assert all(node.quiet for node in cluster.nodes.values())


def test_a_suspected_follower_does_not_disturb_quiet_followers() -> None:
    cluster = _quiet_cluster()
    cluster.call("b", lambda node: node.peer_lost("c"))
    assert cluster.nodes["b"].quiet
    assert cluster.outbox == []


def test_a_restarted_leader_campaigning_wins_over_its_quiet_followers() -> None:
    """Its followers never suspected it: its own vote request tells them it no longer leads."""
    cluster = _quiet_cluster()
    cluster.restart("a")
    cluster.tick_all(40)
    assert len(cluster.leaders()) == 1
    assert cluster.nodes[cluster.leaders()[0]].term > 2


def test_a_restarted_follower_wakes_the_quiet_leader_and_rejoins() -> None:
    cluster = _quiet_cluster()
    term = cluster.nodes["a"].term
    cluster.restart("c")
    assert not cluster.nodes["c"].quiet
    cluster.tick_all(40)
    assert cluster.leaders() == ["a"] and cluster.nodes["a"].term == term
    assert cluster.nodes["c"].leader_id == "a"
    assert all(node.quiet for node in cluster.nodes.values())


def test_a_vote_request_wakes_a_quiet_leader_into_heartbeats() -> None:
    cluster = _quiet_cluster()
    leader = cluster.nodes["a"]
    request = RequestVote("c", "a", leader.term + 1, leader.last_index, leader.term, True)
    ready = cluster.call("a", lambda node: node.step(request))
    assert not leader.quiet
    assert {m.dst for m in ready.messages if isinstance(m, Heartbeat)} == {"b", "c"}


def test_reads_and_transfers_wake_a_quiet_leader() -> None:
    cluster = _quiet_cluster()
    cluster.call("a", lambda node: node.read_index(b"r"))
    assert not cluster.nodes["a"].quiet
    cluster.deliver()
    assert any(r.context == b"r" for ready in cluster.readies["a"] for r in ready.read_states)
    cluster.tick_all(4)
    assert cluster.nodes["a"].quiet
    cluster.call("a", lambda node: node.transfer_leadership("b"))
    cluster.deliver()
    assert cluster.leaders() == ["b"]


def test_a_read_a_follower_confirms_itself_keeps_the_group_quiet() -> None:
    cluster = _quiet_cluster()
    ready = cluster.call("a", lambda node: node.read_index(b"r", confirmed_by="b"))
    assert [r.context for r in ready.read_states] == [b"r"]
    assert ready.messages == ()
    assert all(node.quiet for node in cluster.nodes.values())


@pytest.mark.parametrize("wake", ["suspicion", "transfer"])
def test_a_quiet_leader_woken_between_loop_turns_starts_its_clock_afresh(
    tmp_path: Path, wake: str
) -> None:
    """The node loop sleeps through a quiet node's ticks; when a call between its turns wakes
    the node (the failure detector, a handover on shutdown), those ticks belong to the quiet
    node, which they do nothing to: they must not run as ticks of the awake one (a burst of
    heartbeats, a transfer given up, a step-down for a quorum not heard)."""
    cluster = _quiet_cluster()
    leader, sent = cluster.nodes["a"], []

    async def scenario() -> Role:
        # Ticks long enough that a loaded machine does not stall through several of them.
        settings = LoopSettings(tick_seconds=0.05)
        loop = RaftLoop(leader, FileStorage(tmp_path), MetadataMachine(), sent.extend, settings)
        loop.start()
        await asyncio.sleep(2 * QUIET.election_tick * settings.tick_seconds)
        if wake == "suspicion":
            loop.peer_lost("b")
        else:
            loop.transfer_leadership("b")
        await asyncio.sleep(2 * settings.tick_seconds)
        role = leader.role
        if wake == "transfer":
            with pytest.raises(ProposalRejected, match="being transferred"):
                leader.propose(b"refused while the transfer is on")
        await loop.stop()
        return role

    assert asyncio.run(scenario()) is Role.LEADER
    rounds = sum(1 for m in sent if isinstance(m, Heartbeat) and m.dst == "b")
    assert rounds <= 3, rounds


def test_a_call_between_loop_turns_does_not_delay_the_leaders_heartbeat(tmp_path: Path) -> None:
    """A call into the core between the loop's turns settles the ticks owed so far; the loop,
    asleep until the tick it had worked out, must count again from there. Otherwise a call
    that changes nothing (a handover to the leader itself) loses the ticks the sleep was for,
    and the leader's next heartbeat comes that much late."""
    config = RaftConfig(election_tick=40, heartbeat_tick=10)  # no step-down within the test
    cluster = Cluster(MEMBERS, config)
    cluster.elect("a")
    leader = cluster.nodes["a"]
    settings = LoopSettings(tick_seconds=0.1)
    heartbeats: list[float] = []
    due = config.heartbeat_tick * settings.tick_seconds  # after the start: 1 s

    async def scenario() -> float:
        clock = asyncio.get_running_loop().time

        def send(messages: list[object]) -> None:
            if any(isinstance(m, Heartbeat) and m.dst == "b" for m in messages):
                heartbeats.append(clock())

        loop = RaftLoop(leader, FileStorage(tmp_path), MetadataMachine(), send, settings)
        started = clock()
        loop.start()
        await asyncio.sleep(2 * settings.tick_seconds)  # the loop sleeps toward the heartbeat
        loop.transfer_leadership("a")
        await asyncio.sleep(due + 0.5)
        await loop.stop()
        return started

    started = asyncio.run(scenario())
    assert heartbeats, "no heartbeat"
    # The loss of the ticks slept through would put it about two thirds of `due` later.
    assert heartbeats[0] - started < due + 0.35, heartbeats[0] - started
