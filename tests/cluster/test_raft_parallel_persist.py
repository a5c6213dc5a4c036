"""A leader that sends its appends while it writes them (RaftConfig.parallel_leader_persist).

It counts itself towards a commit only for entries reported durable with `persisted`; the
simulation sends its early messages before the batch is written, so a crash in between loses
entries the followers already have, and Raft's safety invariants must hold all the same.
"""

from __future__ import annotations

import dataclasses

import pytest

from cluster.raft import (
    AppendEntries,
    AppendEntriesResponse,
    RaftConfig,
    RaftNode,
    Ready,
    RequestVote,
    RequestVoteResponse,
    Role,
    StorageState,
)
from tests.cluster.sim import SimNode, Simulation, scenario

PARALLEL = RaftConfig(pre_vote=False, check_quorum=False, parallel_leader_persist=True)


def elect(node: RaftNode, peers: tuple[str, ...]) -> None:
    ready = node.campaign()
    assert not ready.early_messages  # the vote requests wait for the term and vote on disk
    for peer in peers:
        node.step(_vote(peer, node))
    assert node.role is Role.LEADER


def _vote(peer: str, node: RaftNode) -> RequestVoteResponse:
    return RequestVoteResponse(peer, node.id, node.term, True)


def _ack(peer: str, node: RaftNode, index: int) -> AppendEntriesResponse:
    return AppendEntriesResponse(peer, node.id, node.term, True, index)


def leader_of_three() -> RaftNode:
    node = RaftNode("a", ["a", "b", "c"], StorageState(), PARALLEL)
    elect(node, ("b", "c"))
    noop = node.last_index
    node.persisted(noop, node.term)
    for peer in ("b", "c"):
        node.step(_ack(peer, node, noop))
    assert node.commit_index == noop
    return node


def test_a_leaders_appends_are_early_and_it_waits_for_its_own_write() -> None:
    node = leader_of_three()
    ready = node.propose(b"x")
    index = ready.entries[-1].index
    assert {m.dst for m in ready.early_messages if isinstance(m, AppendEntries)} == {"b", "c"}
    assert not ready.messages
    # One follower has it, the leader's own write is not done: no majority yet.
    assert node.step(_ack("b", node, index)).committed == ()
    assert node.commit_index < index
    done = node.persisted(index, node.term)
    assert [entry.index for entry in done.committed] == [index]
    # The followers hear of the commit at once.
    assert all(m.commit == index for m in done.early_messages if isinstance(m, AppendEntries))


def test_two_followers_commit_without_the_leaders_write() -> None:
    node = leader_of_three()
    index = node.propose(b"x").entries[-1].index
    node.step(_ack("b", node, index))
    assert [entry.index for entry in node.step(_ack("c", node, index)).committed] == [index]


def test_stale_reports_are_ignored() -> None:
    node = leader_of_three()
    index = node.propose(b"x").entries[-1].index
    node.step(_ack("b", node, index))
    assert node.persisted(index, node.term - 1).committed == ()
    assert node.persisted(index + 5, node.term).committed == ()
    assert node.commit_index < index


def test_a_lone_voter_commits_once_its_write_is_reported() -> None:
    node = RaftNode("a", ["a"], StorageState(), PARALLEL)
    ready = node.campaign()
    assert node.role is Role.LEADER
    assert ready.committed == () or all(entry.index == 1 for entry in ready.committed)
    noop = node.last_index
    assert [entry.index for entry in node.persisted(noop, node.term).committed] == [noop]
    index = node.propose(b"x").entries[-1].index
    assert node.commit_index < index
    assert [entry.index for entry in node.persisted(index, node.term).committed] == [index]


def test_followers_and_candidates_send_nothing_early() -> None:
    follower = RaftNode("b", ["a", "b", "c"], StorageState(), PARALLEL)
    ready = follower.step(AppendEntries("a", "b", 2, 1, 1, (), 1))
    assert not ready.early_messages
    assert any(isinstance(m, AppendEntriesResponse) for m in ready.messages)
    candidate = RaftNode("c", ["a", "b", "c"], StorageState(), PARALLEL)
    ready = candidate.campaign()
    assert not ready.early_messages
    assert any(isinstance(m, RequestVote) for m in ready.messages)


def test_without_the_setting_nothing_changes() -> None:
    node = RaftNode("a", ["a"], StorageState(), RaftConfig())
    node.campaign()
    ready = node.propose(b"x")
    assert [entry.index for entry in ready.committed][-1] == ready.entries[-1].index
    assert not ready.early_messages


class ParallelPersistSimulation(Simulation):
    """Sends a batch's early messages before writing it, and reports each write afterwards."""

    def _handle(self, node: SimNode, ready: Ready) -> None:
        raft = node.raft
        for message in ready.early_messages:
            self._send(message)
        super()._handle(node, ready)
        if node.raft is not raft:
            if ready.early_messages and ready.entries:
                self.stats["crash_after_early_appends"] += 1
            return
        if raft is not None and ready.entries:
            last = ready.entries[-1]
            self._handle(node, raft.persisted(last.index, last.term))


def parallel_run(seed: int) -> Simulation:
    base = scenario(seed, None)
    members = len(base.nodes["n1"].bootstrap_peers)
    sim = ParallelPersistSimulation(
        seed,
        members=members,
        spares=len(base.nodes) - members,
        config=dataclasses.replace(base.config, parallel_leader_persist=True),
        faults=base.faults,
        activity=base.activity,
    )
    sim.run(250)
    sim.heal()
    sim.check_liveness()
    return sim


@pytest.mark.parametrize("first", range(0, 200, 50))
def test_simulated_schedules_stay_safe_with_early_appends(first: int) -> None:
    for seed in range(first, first + 50):
        parallel_run(seed)


def test_the_schedules_crash_with_appends_sent_but_not_written() -> None:
    crashes = sum(parallel_run(seed).stats["crash_after_early_appends"] for seed in range(60))
    assert crashes > 0
