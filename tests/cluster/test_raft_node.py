"""Transcripts of the Raft core, one feature at a time: messages in, Ready batches out."""

from __future__ import annotations

import random

import pytest

from cluster.raft import (
    AppendEntries,
    AppendEntriesResponse,
    ConfChange,
    ConfOp,
    Entry,
    EntryKind,
    HardState,
    Heartbeat,
    InstallSnapshot,
    NotLeader,
    ProposalRejected,
    RaftConfig,
    RaftNode,
    RequestVote,
    RequestVoteResponse,
    Role,
    Snapshot,
    StorageState,
    TimeoutNow,
    encode_conf_change,
)
from cluster.raft.log import RaftLog
from tests.cluster.raft_harness import TEST_CONFIG, Cluster

ABC = ["a", "b", "c"]


def bootstrap_entry(voters: list[str]) -> Entry:
    change = ConfChange(ConfOp.BOOTSTRAP, None, tuple(sorted(voters)))
    return Entry(1, 1, EntryKind.CONF, encode_conf_change(change))


def node_with_log(
    node_id: str, terms: list[int], term: int, commit: int = 1, config: RaftConfig = TEST_CONFIG
) -> RaftNode:
    """A member of a-b-c whose log holds one entry per term in `terms` after the bootstrap."""
    entries = [bootstrap_entry(ABC)]
    entries += [Entry(i, t, EntryKind.NORMAL, b"%d" % i) for i, t in enumerate(terms, start=2)]
    stored = StorageState(HardState(term, None, commit), None, tuple(entries))
    node = RaftNode(node_id, [], stored, config, random.Random(1))
    node.ready()
    return node


# -- election ------------------------------------------------------------------------------


def test_a_new_cluster_elects_one_leader_which_commits_its_noop() -> None:
    cluster = Cluster(ABC)
    assert all(node.commit_index == 1 for node in cluster.nodes.values())
    leader = cluster.elect("a")
    cluster.tick_all()
    assert cluster.leaders() == ["a"]
    assert leader.term == 2
    assert [(e.index, e.kind) for e in cluster.applied["b"]] == [
        (1, EntryKind.CONF),
        (2, EntryKind.NOOP),
    ]


def test_elections_happen_on_their_own_after_the_timeout() -> None:
    cluster = Cluster(ABC)
    cluster.tick_all(2 * TEST_CONFIG.election_tick + 5)
    assert len(cluster.leaders()) == 1


def test_followers_refuse_proposals_and_name_the_leader() -> None:
    cluster = Cluster(ABC)
    cluster.elect("a")
    cluster.tick_all()
    with pytest.raises(NotLeader) as refusal:
        cluster.nodes["b"].propose(b"x")
    assert refusal.value.leader == "a"


def test_the_vote_is_persisted_before_the_reply_and_survives_a_restart() -> None:
    cluster = Cluster(ABC)
    ready = cluster.call("b", lambda node: node.step(RequestVote("a", "b", 5, 1, 1)))
    assert ready.hard_state == HardState(5, "a", 1)
    assert ready.messages == (RequestVoteResponse("b", "a", 5, True),)
    cluster.restart("b")
    again = cluster.call("b", lambda node: node.step(RequestVote("c", "b", 5, 1, 1)))
    assert again.messages == (RequestVoteResponse("b", "c", 5, False),)


def test_votes_go_only_to_candidates_with_logs_at_least_as_recent() -> None:
    voter = node_with_log("b", [2, 3], term=3)
    stale = voter.step(RequestVote("a", "b", 4, 5, 2))  # longer log, older last term
    assert stale.messages == (RequestVoteResponse("b", "a", 4, False),)
    current = voter.step(RequestVote("c", "b", 4, 3, 3))
    assert current.messages == (RequestVoteResponse("b", "c", 4, True),)


def test_granting_a_pre_vote_changes_neither_term_nor_vote() -> None:
    voter = node_with_log("b", [], term=1)
    ready = voter.step(RequestVote("a", "b", 5, 1, 1, pre_vote=True))
    assert ready.messages == (RequestVoteResponse("b", "a", 5, True, pre_vote=True),)
    assert ready.hard_state is None
    assert voter.term == 1


def test_pre_vote_keeps_a_partitioned_node_from_inflating_terms() -> None:
    cluster = Cluster(ABC)
    cluster.elect("a")
    cluster.tick_all()
    cluster.cut = {"c"}
    cluster.tick_all(10 * TEST_CONFIG.election_tick)
    assert cluster.nodes["c"].term == 2, "pre-vote failed, so the term must not move"
    cluster.cut = set()
    cluster.tick_all(3)
    assert cluster.leaders() == ["a"]
    assert {node.term for node in cluster.nodes.values()} == {2}


def test_without_pre_vote_a_partitioned_node_disrupts_the_cluster_on_return() -> None:
    cluster = Cluster(ABC, config=RaftConfig(election_tick=10, heartbeat_tick=1, pre_vote=False))
    cluster.elect("a")
    cluster.tick_all()
    cluster.cut = {"c"}
    cluster.tick_all(10 * TEST_CONFIG.election_tick)
    assert cluster.nodes["c"].term > 5
    cluster.cut = set()
    cluster.tick_all(3 * TEST_CONFIG.election_tick)
    assert cluster.nodes["a"].term > 5, "the leader had to give way to the inflated term"


def test_a_node_hearing_from_its_leader_ignores_vote_requests() -> None:
    cluster = Cluster(ABC)
    cluster.elect("a")
    cluster.tick_all()
    ready = cluster.call("b", lambda node: node.step(RequestVote("c", "b", 9, 10, 9)))
    assert ready.messages == ()
    assert cluster.nodes["b"].term == 2


# -- check-quorum --------------------------------------------------------------------------


def test_check_quorum_makes_an_isolated_leader_step_down() -> None:
    cluster = Cluster(ABC)
    cluster.elect("a")
    cluster.tick_all()
    cluster.cut = {"a"}
    cluster.tick("a", TEST_CONFIG.election_tick)
    assert cluster.nodes["a"].role is Role.FOLLOWER
    assert cluster.nodes["a"].leader_id is None


def quiet_ticks(node: RaftNode, times: int) -> None:
    """Tick `node` `times` times, each of which must send nothing and change no role."""
    role = node.role
    for _ in range(times):
        assert node.tick().messages == ()
        assert node.role is role


def test_idle_ticks_name_the_first_tick_that_does_anything() -> None:
    cluster = Cluster(ABC)
    leader = cluster.elect("a")
    cluster.tick_all()
    follower = cluster.nodes["b"]
    # A follower that hears nothing more campaigns on the tick it named, not before.
    idle = follower.idle_ticks()
    assert idle > 1
    quiet_ticks(follower, idle - 1)
    assert follower.tick().messages != ()
    assert follower.role is Role.PRE_CANDIDATE
    # A leader's next tick that does anything sends heartbeats...
    idle = leader.idle_ticks()
    quiet_ticks(leader, idle - 1)
    assert {m.dst for m in leader.tick().messages} == {"b", "c"}
    # ...and, with nobody answering, the one that finds the quorum lost steps down.
    while leader.role is Role.LEADER:
        idle = leader.idle_ticks()
        for _ in range(idle - 1):
            leader.tick()
            assert leader.role is Role.LEADER
        leader.tick()
    assert leader.idle_ticks() >= TEST_CONFIG.election_tick


def test_without_check_quorum_an_isolated_leader_keeps_leading() -> None:
    config = RaftConfig(election_tick=10, heartbeat_tick=1, check_quorum=False)
    cluster = Cluster(ABC, config=config)
    cluster.elect("a")
    cluster.tick_all()
    cluster.cut = {"a"}
    cluster.tick("a", 5 * config.election_tick)
    assert cluster.nodes["a"].role is Role.LEADER


def test_a_deposed_leader_learns_the_new_term_from_the_followers_replies() -> None:
    cluster = Cluster(
        ABC, config=RaftConfig(election_tick=10, heartbeat_tick=1, check_quorum=False)
    )
    cluster.elect("a")
    cluster.tick_all()
    cluster.cut = {"a"}
    cluster.tick_all(4 * TEST_CONFIG.election_tick)
    new_leader = [n for n in cluster.leaders() if n != "a"]
    assert len(new_leader) == 1
    cluster.cut = set()
    cluster.tick("a")
    cluster.deliver()
    assert cluster.nodes["a"].role is Role.FOLLOWER
    assert cluster.nodes["a"].term == cluster.nodes[new_leader[0]].term


# -- log replication -----------------------------------------------------------------------


def test_a_follower_truncates_at_the_first_conflict_only() -> None:
    follower = node_with_log("b", [1, 2, 2], term=2)  # entries 2..4
    ready = follower.step(
        AppendEntries(
            "a",
            "b",
            3,
            prev_index=2,
            prev_term=1,
            entries=(Entry(3, 2, data=b"3"), Entry(4, 3, data=b"new"), Entry(5, 3)),
            commit=1,
        )
    )
    assert ready.truncate_from == 4
    assert [(e.index, e.term) for e in ready.entries] == [(4, 3), (5, 3)]
    assert ready.messages == (AppendEntriesResponse("b", "a", 3, True, 5),)
    assert follower.term_at(3) == 2 and follower.term_at(4) == 3


def test_a_late_duplicate_append_never_truncates_matching_entries() -> None:
    follower = node_with_log("b", [2, 2, 2], term=2)  # entries 2..4
    late = AppendEntries("a", "b", 2, 1, 1, (Entry(2, 2, data=b"2"),), commit=1)
    ready = follower.step(late)
    assert ready.truncate_from is None and ready.entries == ()
    assert follower.last_index == 4
    # It confirms only what the message covered, not the rest of the log.
    assert ready.messages == (AppendEntriesResponse("b", "a", 2, True, 2),)


def test_a_follower_commits_only_what_the_leader_confirmed_it_holds() -> None:
    # Entries 3 and 4 are from a deposed leader of term 2; the new leader has other ones there.
    follower = node_with_log("b", [1, 2, 2], term=3)
    follower.step(AppendEntries("a", "b", 3, 1, 1, (Entry(2, 1, data=b"2"),), commit=4))
    assert follower.commit_index == 2


def test_heartbeats_carry_no_commit_index_beyond_what_the_follower_holds() -> None:
    cluster = Cluster(ABC)
    cluster.elect("a")
    cluster.cut = {"c"}
    for i in range(3):
        cluster.propose("a", b"cmd%d" % i)
    cluster.deliver()
    cluster.cut = set()
    cluster.tick("a")
    beats = {m.dst: m.commit for m in cluster.outbox if isinstance(m, Heartbeat)}
    assert beats == {"b": 5, "c": 2}


def test_a_refused_append_carries_a_hint_that_skips_a_whole_divergent_term() -> None:
    follower = node_with_log("b", [1, 2, 2, 2, 2], term=3)  # entries 2..6
    ready = follower.step(AppendEntries("a", "b", 3, 6, 3, (), commit=1))
    (reply,) = ready.messages
    assert isinstance(reply, AppendEntriesResponse) and not reply.success
    assert (reply.hint_index, reply.hint_term) == (6, 2)
    leader_log = RaftLog(None, [bootstrap_entry(ABC), *(Entry(i, 3) for i in range(2, 7))])
    # The leader's log has term <= 2 only up to index 1, so it retries from index 2 at once.
    assert leader_log.find_conflict_by_term(reply.hint_index, reply.hint_term) == 1


def test_a_leader_counts_replicas_only_for_entries_of_its_own_term() -> None:
    # Raft §5.4.2: entry 2 (term 2) is on a and b, a majority, but a leads term 3 now.
    leader = node_with_log("a", [2], term=2)
    leader.campaign()
    leader.step(RequestVoteResponse("b", "a", 3, True, pre_vote=True))
    leader.step(RequestVoteResponse("b", "a", 3, True))
    assert leader.role is Role.LEADER and leader.last_index == 3  # its no-op
    leader.step(AppendEntriesResponse("b", "a", 3, True, 2))
    assert leader.commit_index == 1, "an older term's entry must not commit by counting"
    leader.step(AppendEntriesResponse("b", "a", 3, True, 3))
    assert leader.commit_index == 3


def test_several_commands_proposed_at_once_share_one_round_of_appends() -> None:
    cluster = Cluster(ABC)
    cluster.elect("a")
    cluster.deliver()
    ready = cluster.propose_many("a", [b"x", b"y", b"z"])
    assert [e.data for e in ready.entries] == [b"x", b"y", b"z"]
    appends = [m for m in ready.messages if isinstance(m, AppendEntries)]
    assert sorted(m.dst for m in appends) == ["b", "c"]
    assert all(len(m.entries) == 3 for m in appends)
    cluster.deliver()
    assert cluster.nodes["a"].commit_index == ready.entries[-1].index


def test_a_restarted_node_recovers_its_log_and_reapplies_committed_entries() -> None:
    cluster = Cluster(ABC)
    cluster.elect("a")
    for i in range(5):
        cluster.propose("a", b"cmd%d" % i)
    cluster.deliver()
    cluster.tick_all()
    before = cluster.log_terms("b")
    cluster.restart("b")
    assert cluster.log_terms("b") == before
    assert [e.data for e in cluster.applied["b"] if e.kind is EntryKind.NORMAL] == [
        b"cmd%d" % i for i in range(5)
    ]


# -- snapshots -----------------------------------------------------------------------------


def test_a_follower_far_behind_gets_the_leaders_snapshot() -> None:
    cluster = Cluster(ABC)
    leader = cluster.elect("a")
    cluster.cut = {"c"}
    for i in range(20):
        cluster.propose("a", b"cmd%d" % i)
    cluster.deliver()
    cluster.call("a", lambda node: node.compact(node.commit_index, b"state-at-22"))
    assert leader.first_index == 23
    cluster.propose("a", b"after")
    cluster.cut = set()
    cluster.tick_all(3)
    installs = [r.snapshot for r in cluster.readies["c"] if r.snapshot is not None]
    assert [(s.index, s.data) for s in installs] == [(22, b"state-at-22")]
    assert cluster.storage["c"].snapshot == installs[0]
    assert cluster.nodes["c"].commit_index == leader.commit_index == 23
    assert cluster.log_terms("c") == cluster.log_terms("a")
    assert cluster.nodes["c"].voters == ("a", "b", "c")


def test_a_snapshot_the_follower_already_holds_only_advances_its_commit() -> None:
    follower = node_with_log("b", [2, 2, 2], term=2)
    ready = follower.step(InstallSnapshot("a", "b", 2, Snapshot(3, 2, tuple(ABC), b"s")))
    assert ready.snapshot is None and ready.truncate_from is None
    assert follower.commit_index == 3 and follower.last_index == 4


def test_compaction_refuses_unapplied_entries() -> None:
    cluster = Cluster(ABC)
    leader = cluster.elect("a")
    with pytest.raises(ValueError, match="applied"):
        leader.compact(leader.last_index + 1, b"")


# -- membership ------------------------------------------------------------------------------


def test_a_new_member_catches_up_and_counts_once_the_change_is_appended() -> None:
    cluster = Cluster(ABC, spares=("d",))
    leader = cluster.elect("a")
    cluster.tick_all()
    assert cluster.nodes["d"].voters == ()
    cluster.call("a", lambda node: node.propose_conf_change(ConfOp.ADD, "d"))
    assert leader.voters == ("a", "b", "c", "d"), "effective on the leader once appended"
    with pytest.raises(ProposalRejected, match="in progress"):
        leader.propose_conf_change(ConfOp.REMOVE, "b")
    cluster.tick_all(3)
    assert all(node.voters == ("a", "b", "c", "d") for node in cluster.nodes.values())
    assert cluster.nodes["d"].commit_index == leader.commit_index
    # With four voters a majority is three: two nodes down stop commits.
    cluster.cut = {"c", "d"}
    before = leader.commit_index
    cluster.propose("a", b"needs three")
    cluster.tick_all(2)
    assert leader.commit_index == before


def test_a_removed_leader_steps_down_after_the_change_commits_and_stays_quiet() -> None:
    cluster = Cluster(ABC)
    leader = cluster.elect("a")
    cluster.tick_all()
    cluster.call("a", lambda node: node.propose_conf_change(ConfOp.REMOVE, "a"))
    cluster.deliver()
    assert leader.role is Role.FOLLOWER
    assert leader.voters == ("b", "c")
    term = leader.term
    cluster.tick_all(4 * TEST_CONFIG.election_tick)
    assert len([n for n in cluster.leaders() if n in ("b", "c")]) == 1
    assert leader.role is Role.FOLLOWER and leader.term >= term
    assert "a" not in cluster.nodes[cluster.leaders()[0]].voters


def test_membership_changes_wait_for_the_leaders_first_commit() -> None:
    cluster = Cluster(ABC)
    cluster.call("a", lambda node: node.campaign())
    cluster.deliver(keep=lambda m: not isinstance(m, AppendEntries))
    assert cluster.nodes["a"].role is Role.LEADER
    with pytest.raises(ProposalRejected):
        cluster.nodes["a"].propose_conf_change(ConfOp.ADD, "d")


def test_a_truncated_membership_change_is_undone_on_the_follower() -> None:
    follower = node_with_log("b", [2], term=2)
    change = ConfChange(ConfOp.ADD, "d", ("a", "b", "c", "d"))
    follower.step(
        AppendEntries(
            "a", "b", 2, 2, 2, (Entry(3, 2, EntryKind.CONF, encode_conf_change(change)),), 1
        )
    )
    assert follower.voters == ("a", "b", "c", "d")
    follower.step(AppendEntries("c", "b", 3, 2, 2, (Entry(3, 3),), 1))
    assert list(follower.voters) == ABC


# -- leadership transfer ---------------------------------------------------------------------


def test_leadership_transfer_catches_the_target_up_then_hands_over() -> None:
    cluster = Cluster(ABC)
    cluster.elect("a")
    cluster.cut = {"b"}
    cluster.propose("a", b"b misses this")
    cluster.deliver()
    cluster.cut = set()
    cluster.call("a", lambda node: node.transfer_leadership("b"))
    with pytest.raises(ProposalRejected, match="transferred"):
        cluster.nodes["a"].propose(b"during transfer")
    sent = list(cluster.outbox)
    cluster.deliver()
    assert not any(isinstance(m, TimeoutNow) for m in sent), "b had to catch up first"
    assert cluster.leaders() == ["b"]
    assert cluster.nodes["b"].term == 3
    cluster.tick_all()
    cluster.propose("b", b"after transfer")
    cluster.deliver()
    assert cluster.nodes["a"].commit_index == cluster.nodes["b"].last_index


def test_a_transfer_that_does_not_complete_is_abandoned() -> None:
    cluster = Cluster(ABC)
    cluster.elect("a")
    cluster.tick_all()
    cluster.cut = {"b"}
    cluster.call("a", lambda node: node.transfer_leadership("b"))
    with pytest.raises(ProposalRejected):
        cluster.nodes["a"].propose(b"refused")
    cluster.tick_all(TEST_CONFIG.election_tick)
    assert cluster.leaders() == ["a"]
    cluster.propose("a", b"leading again")


# -- ReadIndex -----------------------------------------------------------------------------


def test_read_index_waits_for_a_quorum_to_confirm_the_leader() -> None:
    cluster = Cluster(ABC)
    leader = cluster.elect("a")
    cluster.tick_all()
    first = cluster.call("a", lambda node: node.read_index(b"r1"))
    assert first.read_states == ()
    cluster.deliver()
    reads = [rs for ready in cluster.readies["a"] for rs in ready.read_states]
    assert [(rs.context, rs.index) for rs in reads] == [(b"r1", leader.commit_index)]


def test_reads_pending_when_leadership_is_lost_are_failed() -> None:
    cluster = Cluster(ABC)
    cluster.elect("a")
    cluster.tick_all()
    cluster.cut = {"a"}
    cluster.call("a", lambda node: node.read_index(b"r1"))
    cluster.tick("a", TEST_CONFIG.election_tick)
    reads = [rs for ready in cluster.readies["a"] for rs in ready.read_states]
    assert [(rs.context, rs.index) for rs in reads] == [(b"r1", None)]


def test_a_new_leader_answers_reads_only_after_its_first_commit() -> None:
    cluster = Cluster(ABC)
    cluster.call("a", lambda node: node.campaign())
    cluster.deliver(keep=lambda m: not isinstance(m, AppendEntries))
    cluster.call("a", lambda node: node.read_index(b"r1"))
    cluster.deliver(keep=lambda m: not isinstance(m, AppendEntries))
    assert not [rs for ready in cluster.readies["a"] for rs in ready.read_states]
    cluster.tick_all()
    reads = [rs for ready in cluster.readies["a"] for rs in ready.read_states]
    assert [(rs.context, rs.index) for rs in reads] == [(b"r1", 2)]


def test_a_read_a_follower_confirms_itself_needs_no_heartbeat_round_among_three() -> None:
    # The follower that asked counts as one confirmation (it checks its term as the answer
    # arrives): with the leader that makes a majority of three, so the answer is immediate.
    cluster = Cluster(ABC)
    leader = cluster.elect("a")
    cluster.tick_all()
    cluster.cut = {"a"}  # no heartbeat could confirm anything
    ready = cluster.call("a", lambda node: node.read_index(b"r1", confirmed_by="b"))
    assert [(rs.context, rs.index) for rs in ready.read_states] == [(b"r1", leader.commit_index)]
    assert not [m for m in ready.messages if isinstance(m, Heartbeat)]


def test_a_read_confirmed_by_a_non_voter_or_among_five_still_needs_heartbeats() -> None:
    cluster = Cluster(ABC)
    cluster.elect("a")
    cluster.tick_all()
    cluster.cut = {"a"}
    ready = cluster.call("a", lambda node: node.read_index(b"r1", confirmed_by="stranger"))
    assert ready.read_states == ()
    five = Cluster(["a", "b", "c", "d", "e"])
    five.elect("a")
    five.tick_all()
    five.cut = {"a"}
    ready = five.call("a", lambda node: node.read_index(b"r2", confirmed_by="b"))
    assert ready.read_states == ()
    five.cut = set()
    five.deliver()
    reads = [rs.context for ready in five.readies["a"] for rs in ready.read_states]
    assert reads == [b"r2"]


def test_a_single_node_cluster_answers_reads_at_once() -> None:
    cluster = Cluster(["solo"])
    cluster.elect("solo")
    ready = cluster.call("solo", lambda node: node.read_index(b"r"))
    assert [(rs.context, rs.index) for rs in ready.read_states] == [(b"r", 2)]
