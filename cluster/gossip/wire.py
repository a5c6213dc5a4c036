"""Gossip statements on the wire: MemberState records to and from their protobuf form."""

from __future__ import annotations

from collections.abc import Iterable

from cluster.gossip.report import (
    ClientCount,
    ConsumerFlow,
    LinkReport,
    NodeReport,
    QueueCounters,
)
from cluster.gossip.swim import MemberState, MemberStatus
from proto import gossip_pb2

_TO_WIRE = {
    MemberStatus.ALIVE: gossip_pb2.ALIVE,
    MemberStatus.SUSPECT: gossip_pb2.SUSPECT,
    MemberStatus.DEAD: gossip_pb2.DEAD,
}
_FROM_WIRE = {wire: status for status, wire in _TO_WIRE.items()}
_LINK_FIELDS = LinkReport.__slots__


def encode_states(states: Iterable[MemberState]) -> list[gossip_pb2.MemberState]:
    """The protobuf form of `states`."""
    return [_encode(state) for state in states]


def decode_states(items: Iterable[gossip_pb2.MemberState]) -> list[MemberState]:
    """The statements in `items`; unknown statuses are skipped (a newer peer's extension)."""
    return [_decode(item) for item in items if item.status in _FROM_WIRE and item.name]


def _encode(state: MemberState) -> gossip_pb2.MemberState:
    item = gossip_pb2.MemberState(
        name=state.name, status=_TO_WIRE[state.status], incarnation=state.incarnation
    )
    if state.report is not None:
        report = state.report
        item.has_report = True
        item.report.version = report.version
        item.report.alarms.extend(report.alarms)
        item.report.memory_used = report.memory_used
        item.report.disk_free = report.disk_free
        item.report.run = report.run
        item.report.raft_role = report.raft_role
        item.report.raft_term = report.raft_term
        item.report.queues.extend(
            gossip_pb2.QueueCounters(
                vhost=queue.vhost,
                name=queue.name,
                messages=queue.messages,
                messages_unacknowledged=queue.messages_unacknowledged,
                consumers=queue.consumers,
            )
            for queue in report.queues
        )
        item.report.links.extend(
            gossip_pb2.LinkReport(**{name: getattr(link, name) for name in _LINK_FIELDS})
            for link in report.links
        )
        item.report.clients.extend(
            gossip_pb2.ClientCount(kind=client.kind, name=client.name, count=client.count)
            for client in report.clients
        )
        item.report.consumer_flows.extend(
            gossip_pb2.ConsumerFlow(node=flow.node, consumers=flow.consumers)
            for flow in report.consumer_flows
        )
    return item


def _decode(item: gossip_pb2.MemberState) -> MemberState:
    report = None
    if item.has_report:
        wire = item.report
        report = NodeReport(
            version=wire.version,
            alarms=tuple(wire.alarms),
            memory_used=wire.memory_used,
            disk_free=wire.disk_free,
            queues=tuple(
                QueueCounters(q.vhost, q.name, q.messages, q.messages_unacknowledged, q.consumers)
                for q in wire.queues
            ),
            run=wire.run,
            links=tuple(
                LinkReport(**{name: getattr(link, name) for name in _LINK_FIELDS})
                for link in wire.links
            ),
            clients=tuple(ClientCount(c.kind, c.name, c.count) for c in wire.clients),
            raft_role=wire.raft_role,
            raft_term=wire.raft_term,
            consumer_flows=tuple(ConsumerFlow(f.node, f.consumers) for f in wire.consumer_flows),
        )
    return MemberState(item.name, _FROM_WIRE[item.status], item.incarnation, report)
