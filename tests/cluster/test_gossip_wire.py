"""A node's gossip report survives the wire whole, its consumer flows included."""

from __future__ import annotations

from cluster.gossip import MemberState, MemberStatus, NodeReport
from cluster.gossip.report import ClientCount, ConsumerFlow, LinkReport, QueueCounters
from cluster.gossip.wire import decode_states, encode_states


def test_a_report_round_trips() -> None:
    report = NodeReport(
        version=7,
        alarms=("disk",),
        memory_used=1 << 20,
        disk_free=1 << 30,
        queues=(QueueCounters("/", "orders", 5, 1, 2),),
        run="run-1",
        links=(LinkReport("/", "q", "up", "q", "id", "running", "amqp://h", "tag", "now"),),
        clients=(ClientCount("vhost", "/", 3),),
        raft_role="leader",
        raft_term=4,
        consumer_flows=(ConsumerFlow("a@host", 1), ConsumerFlow("b@host", 2)),
    )
    state = MemberState("a@host", MemberStatus.ALIVE, 3, report)
    (decoded,) = decode_states(encode_states([state]))
    assert decoded == state
    # A report from a node that does not count flows yet reads as having none.
    (older,) = decode_states(encode_states([MemberState("b", MemberStatus.ALIVE, 1, NodeReport())]))
    assert older.report is not None and older.report.consumer_flows == ()
