"""The SWIM core: probing order, suspicion, refutation, death, and rumour precedence."""

from __future__ import annotations

import random

from cluster.gossip import MemberState, MemberStatus, NodeReport, Swim, SwimConfig

CONFIG = SwimConfig(suspicion_timeout=3.0, indirect_probes=2)


def swim(
    name: str = "a", members: tuple[str, ...] = ("a", "b", "c", "d"), incarnation: int = 1
) -> Swim:
    node = Swim(name, incarnation, CONFIG, random.Random(7))
    node.set_members(members, now=0.0)
    return node


def exchange(sender: Swim, receiver: Swim, now: float) -> None:
    """One message from sender to receiver and the answer back."""
    receiver.receive(sender.outgoing(receiver.own_name), now)
    sender.receive(receiver.outgoing(sender.own_name), now)


def test_every_other_member_is_probed_once_per_round() -> None:
    node = swim()
    for _ in range(3):
        targets = [node.next_target() or "" for _ in range(3)]
        assert sorted(targets) == ["b", "c", "d"]


def test_helpers_exclude_self_target_and_dead_members() -> None:
    node = swim()
    node.receive([MemberState("d", MemberStatus.DEAD, 0)], now=1.0)
    assert node.helpers("b") == ["c"]


def test_a_failed_probe_suspects_and_the_timeout_kills() -> None:
    node = swim()
    node.probe_failed("b", now=10.0)
    assert node.view()["b"].status is MemberStatus.SUSPECT
    node.expire(now=12.9)
    assert node.view()["b"].status is MemberStatus.SUSPECT
    node.expire(now=13.0)
    assert node.view()["b"].status is MemberStatus.DEAD


def test_listeners_hear_once_of_each_member_that_stops_being_alive() -> None:
    node = swim()
    lost: list[str] = []
    node.lost_listeners.append(lost.append)
    node.probe_failed("b", now=1.0)
    node.expire(now=10.0)  # suspect, then dead: one loss
    node.receive([MemberState("c", MemberStatus.DEAD, 0)], now=11.0)  # a rumour counts too
    node.receive([MemberState("d", MemberStatus.ALIVE, 5)], now=11.0)
    assert lost == ["b", "c"]


def test_a_suspected_member_refutes_with_a_higher_incarnation() -> None:
    a, b = swim("a"), swim("b", incarnation=5)
    a.receive([MemberState("b", MemberStatus.ALIVE, 5)], now=0.0)
    a.probe_failed("b", now=1.0)
    exchange(a, b, now=1.5)  # b hears of the suspicion in a's message and refutes
    assert b.incarnation == 6
    assert a.view()["b"].status is MemberStatus.ALIVE and a.view()["b"].incarnation == 6
    a.expire(now=100.0)
    assert a.view()["b"].status is MemberStatus.ALIVE


def test_a_node_declared_dead_comes_back_by_refuting() -> None:
    a, b = swim("a"), swim("b", incarnation=3)
    a.receive([MemberState("b", MemberStatus.DEAD, 3)], now=0.0)
    exchange(a, b, now=1.0)
    assert a.view()["b"].status is MemberStatus.ALIVE and b.incarnation == 4


def test_precedence_between_statements_of_one_incarnation() -> None:
    node = swim()
    node.receive([MemberState("b", MemberStatus.SUSPECT, 2)], now=0.0)
    node.receive([MemberState("b", MemberStatus.ALIVE, 2)], now=0.0)
    assert node.view()["b"].status is MemberStatus.SUSPECT
    node.receive([MemberState("b", MemberStatus.DEAD, 2)], now=0.0)
    node.receive([MemberState("b", MemberStatus.SUSPECT, 2)], now=0.0)
    assert node.view()["b"].status is MemberStatus.DEAD
    node.receive([MemberState("b", MemberStatus.ALIVE, 1)], now=0.0)
    assert node.view()["b"].status is MemberStatus.DEAD


def test_reports_spread_and_newer_versions_win() -> None:
    a, b, c = swim("a"), swim("b"), swim("c")
    a.set_report(NodeReport(alarms=("disk",)), now=0.0)
    exchange(a, b, now=0.1)
    exchange(b, c, now=0.2)  # c hears of a's alarm second hand
    report = c.view()["a"].report
    assert report is not None and report.alarms == ("disk",)
    a.set_report(NodeReport(alarms=()), now=1.0)
    exchange(a, c, now=1.1)
    b.receive(a.outgoing("b"), now=1.2)
    stale = MemberState("a", MemberStatus.ALIVE, a.incarnation, NodeReport(1, alarms=("disk",)))
    c.receive([stale], now=1.3)
    kept = c.view()["a"].report
    assert kept is not None and kept.alarms == ()


def test_a_node_restarted_within_the_second_replaces_its_earlier_runs_report() -> None:
    # The earlier run of b, alarmed, made three reports at incarnation 7; a holds the last.
    a, earlier = swim("a"), swim("b", incarnation=7)
    for version in range(3):
        earlier.set_report(NodeReport(alarms=("memory",), memory_used=version), now=0.0)
    exchange(earlier, a, now=0.5)
    later = swim("b", incarnation=7)  # started again within the same second
    later.set_report(NodeReport(), now=1.0)
    exchange(later, a, now=1.5)  # b hears a's account of it, and raises its incarnation
    exchange(later, a, now=2.0)
    report = a.view()["b"].report
    assert later.incarnation == 8
    assert report is not None and report.alarms == ()


def test_an_unchanged_report_is_not_news() -> None:
    node = swim()
    node.set_report(NodeReport(memory_used=1), now=0.0)
    version = node.view()["a"].report.version  # type: ignore[union-attr]
    node.set_report(NodeReport(memory_used=1), now=1.0)
    assert node.view()["a"].report.version == version  # type: ignore[union-attr]


def test_rumours_are_retransmitted_a_bounded_number_of_times() -> None:
    node = swim()
    node.receive([MemberState("c", MemberStatus.SUSPECT, 9)], now=0.0)
    carried = 0
    for _ in range(100):
        if any(state.name == "c" for state in node.outgoing("b")):
            carried += 1
    assert 1 <= carried < 100


def test_members_follow_the_replicated_table() -> None:
    node = swim()
    node.set_members(["a", "b", "e"], now=5.0)
    assert sorted(node.view()) == ["a", "b", "e"]
    assert node.view()["e"].status is MemberStatus.ALIVE
    node.receive([MemberState("c", MemberStatus.ALIVE, 4)], now=6.0)
    assert "c" not in node.view()
