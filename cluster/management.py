"""The cluster as the management API sees it (leveret.mgmt.api_cluster.ClusterControl)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from cluster.gossip import LinkReport, MemberStatus
from cluster.metadata.tables import KEY_FIELDS
from cluster.service import ClusterService
from cluster.status import cluster_status_report
from cluster.tickets import Tickets
from proto.metadata_schema import CommandError, command_from_json


class ClusterManagement:
    """Status for reading, tickets for changes that wait on a majority."""

    def __init__(self, service: ClusterService, cluster_name: Callable[[], str]) -> None:
        self._service = service
        self._cluster_name = cluster_name
        self._tickets = Tickets()

    def status_report(self) -> dict[str, Any]:
        return cluster_status_report(self._service.status(), self._cluster_name())

    def node_entries(self) -> dict[str, dict[str, Any]]:
        """Per known node: RabbitMQ's node fields this node knows of it (from gossip), and a
        `cluster` object with its address, Raft and gossip state."""
        status = self._service.status()
        entries: dict[str, dict[str, Any]] = {}
        for name in status.known_nodes:
            view = status.gossip.get(name)
            report = view.report if view is not None else None
            cluster: dict[str, Any] = {
                "address": status.members.get(name, ""),
                "voter": name in status.voters,
                "leader": name == status.leader,
                "gossip": {
                    "status": view.status.value if view else MemberStatus.DEAD.value,
                    "incarnation": view.incarnation if view else 0,
                },
                "alarms": list(report.alarms) if report else [],
                "queue_counters": [
                    {
                        "vhost": queue.vhost,
                        "name": queue.name,
                        "messages": queue.messages,
                        "messages_unacknowledged": queue.messages_unacknowledged,
                        "consumers": queue.consumers,
                    }
                    for queue in (report.queues if report else ())
                ],
                "consumer_flows": {
                    flow.node: flow.consumers for flow in (report.consumer_flows if report else ())
                },
            }
            if name != status.node and report and report.raft_role and status.is_running(name):
                # Another node's role and term as it last gossiped them (a lost node's are
                # not shown: they may have changed since).
                cluster["raft"] = {"role": report.raft_role, "term": report.raft_term}
            if name == status.node:
                cluster["raft"] = {
                    "role": status.role,
                    "term": status.term,
                    "leader": status.leader,
                    "commit_index": status.commit_index,
                    "applied_index": status.applied_index,
                }
            entry: dict[str, Any] = {
                "name": name,
                "type": "disc",
                "running": status.is_running(name),
                "cluster": cluster,
            }
            if report is not None:
                entry.update(
                    mem_used=report.memory_used,
                    mem_alarm="memory" in report.alarms,
                    disk_free=report.disk_free,
                    disk_free_alarm="disk" in report.alarms,
                )
            entries[name] = entry
        return entries

    def peer_links(self) -> list[dict[str, Any]]:
        status = self._service.status()
        found: list[dict[str, Any]] = []
        for name, view in status.gossip.items():
            if name == status.node or view.status is not MemberStatus.ALIVE or not view.report:
                continue
            for link in view.report.links:
                shown = {field: getattr(link, field) for field in LinkReport.__slots__}
                found.append({"node": name, **{k: v for k, v in shown.items() if v}})
        return found

    def majority_text(self) -> str | None:
        status = self._service.status()
        reachable = len(status.reachable_voters())
        if status.voters and reachable > len(status.voters) // 2:
            return None
        return status.quorum_text()

    def queue_report(self, node: str, vhost: str, name: str) -> tuple[bool, dict[str, int]]:
        view = self._service.status().gossip.get(node)
        if view is None:
            return False, {}
        running = view.status is MemberStatus.ALIVE
        report = view.report
        for queue in report.queues if report is not None else ():
            if queue.vhost == vhost and queue.name == name:
                return running, {
                    "messages": queue.messages,
                    "messages_unacknowledged": queue.messages_unacknowledged,
                    "consumers": queue.consumers,
                }
        return running, {}

    def start_submit(self, command: dict[str, Any]) -> str:
        return self._tickets.start(self._submit(command))

    def start_read_barrier(self) -> str:
        return self._tickets.start(self._barrier())

    def start_forget(self, node: str) -> str:
        return self._tickets.start(self._forget(node))

    def ticket(self, ticket: str) -> dict[str, Any] | None:
        return self._tickets.outcome(ticket)

    def metadata(self, table: str | None = None) -> dict[str, Any] | None:
        """The replicated tables as applied on this node (None: no such table)."""
        if table is not None and table not in KEY_FIELDS:
            return None
        # The snapshot is every table's records in key order, as JSON.
        tables = json.loads(self._service.metadata.snapshot())
        names = sorted(KEY_FIELDS) if table is None else [table]
        return {name: tables.get(name, []) for name in names}

    def close(self) -> None:
        self._tickets.cancel_all()

    async def _submit(self, body: dict[str, Any]) -> dict[str, Any]:
        try:
            command = command_from_json(body)
        except CommandError as error:
            # The reply the store gives a command it cannot apply, without a trip through the log.
            return {"status": "error", "reason": str(error)}
        return await self._service.submit(command)

    async def _barrier(self) -> dict[str, Any]:
        await self._service.read_barrier()
        return {"applied_index": self._service.status().applied_index}

    async def _forget(self, node: str) -> dict[str, Any]:
        await self._service.forget_node(node)
        return {"forgotten": node}
