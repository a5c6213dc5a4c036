"""How a node runs its cluster service: started with the node, stopped before it.

Every node keeps its definitions in the cluster's replicated store, a node that runs alone in
its own one-voter one: the broker submits each change there, and the mirror applies what the
store commits to the broker's model. A new node gives the store its defaults (or the journal
an older version left in the data directory) on its first start; a node that joins brings
none, as RabbitMQ resets a joining node. A marker file remembers that this happened.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from cluster.errors import ClusterError
from cluster.gossip.report import NodeReport
from cluster.management import ClusterManagement
from cluster.secret import CallVerifier, SecretError
from cluster.service import ClusterService
from cluster.settings import ClusterSettings
from cluster.transport import TlsFiles
from proto.metadata_schema import Batch, DeleteExchange

from ..definitions_log import DefinitionsLog
from ..mgmt.cluster_link import attach_cluster, detach_cluster
from ..server.node import StartupError
from ..sysexits import EX_CONFIG, EX_UNAVAILABLE
from .broker_mirror import BrokerMirror
from .cluster_metadata import ClusterMetadata
from .journal_import import default_commands, journal_commands
from .local_report import broker_report
from .queue_link import QueueLinks
from .queue_service import QueuesService

log = logging.getLogger(__name__)

# How long a node that joins a cluster for the first time waits for its definitions to arrive
# before it accepts clients anyway.
_FIRST_DEFINITIONS_SECONDS = 10.0


class ClusterPlugin:
    """The node's cluster service, its management view, and the replicated definitions."""

    def __init__(self, config: Any, broker: Any) -> None:
        try:
            settings = ClusterSettings.from_config(config)
        except SecretError as error:
            raise StartupError(EX_CONFIG, str(error)) from None
        self._broker = broker
        self._settings = settings
        self._data_port = int(getattr(config, "data_port", 0))
        self._queues = QueuesService(broker)
        self.service = ClusterService(
            settings,
            report_source=self._report,
            services=[self._queues.install],
        )
        self._links: QueueLinks | None = None
        self._management = ClusterManagement(self.service, lambda: broker.config.cluster_name)
        self.metadata = ClusterMetadata(self.service)
        self._mirror = BrokerMirror(broker, self.metadata, lambda: self.service.metadata)
        self._data_dir = settings.data_dir
        # The file name predates lone nodes keeping their definitions in the store as well.
        self._marker = settings.data_dir / "cluster" / "shares-definitions"
        self._joins_fresh = bool(settings.join) and _is_empty(settings.raft_dir)
        self._catch_up: asyncio.Task[None] | None = None
        self.service.on_effects(self._mirror.apply)
        # Alarms are cluster-wide: this node's changes go to the others at once, and theirs are
        # taken in as they arrive.
        self.service.peer_alarms_changed = broker.set_peer_alarms
        broker.alarm_listeners.append(lambda _alarmed: self.service.announce_report())
        self.service.machine.on_reset(lambda _state: self._mirror.rebuild())

    def _report(self) -> NodeReport:
        """This node's gossip report, made every protocol period and when its alarms change."""
        status = self.service.status()
        return broker_report(
            self._broker,
            self._settings.data_dir,
            status.role,
            status.term,
            self._queues.consumers_by_peer(),
        )

    @property
    def port(self) -> int:
        return self.service.port

    @property
    def tls_files(self) -> TlsFiles | None:
        """The node-to-node TLS files, reloaded by the node's certificate reloader."""
        return self._settings.tls

    def _peer_clients(self, kind: str, name: str) -> int:
        """What the other running nodes last reported holding for a vhost or user."""
        status = self.service.status()
        return sum(
            client.count
            for node, view in status.gossip.items()
            if node != status.node and status.is_running(node) and view.report is not None
            for client in view.report.clients
            if client.kind == kind and client.name == name
        )

    @property
    def data_port(self) -> int:
        """Where other nodes' data connections are accepted (the queue data plane)."""
        return self._queues.port

    async def start(self) -> None:
        self._broker.use_metadata(self.metadata)
        self._broker.peer_clients = self._peer_clients
        settings, tls = self._settings, self._settings.tls
        # Listening first: peers ask the cluster port for this one as soon as it answers.
        await self._queues.start(
            settings.bind,
            self._data_port,
            CallVerifier(settings.secret),
            tls.server_context() if tls else None,
        )
        await self.service.start()
        self._links = QueueLinks(
            self.service.address_of,
            self.service.peers,
            lambda: self.service.applied_index,
            lambda: self._broker.connections_mid_read > 0,
            self._broker.busy_poll.input_arrived,
            self._broker.pending_writes.after_read,
            tls.client_context() if tls else None,
        )
        self.service.heard_from = self._links.heard_from
        self._broker.link_queues(self._links)
        attach_cluster(self._broker, self._management)
        self._mirror.rebuild()
        if not self._marker.exists():
            if not self._joins_fresh:
                await self._give_first_definitions()
            self._write_marker()
        elif not self._joins_fresh:
            await self._forget_transient_exchanges()
        self._catch_up = asyncio.get_running_loop().create_task(
            self._finish_recovery_when_caught_up(), name="cluster-catch-up"
        )
        await self._wait_first_definitions()

    async def hand_over_leadership(self) -> None:
        await self.service.hand_over_leadership()

    async def stop(self) -> None:
        """Hands leadership over first, when this node leads."""
        if self._catch_up is not None:
            self._catch_up.cancel()
            await asyncio.gather(self._catch_up, return_exceptions=True)
        await self.metadata.stop()
        self._broker.link_queues(None)
        if self._links is not None:
            await self._links.close()
        await self._queues.stop()
        detach_cluster(self._broker)
        self._management.close()
        await self.service.stop()

    # -- the replicated definitions --------------------------------------------------------

    async def _give_first_definitions(self) -> None:
        """A new node's defaults, or the journal of an older version, become the store's (this
        node is its only voter until another joins it)."""
        journal = DefinitionsLog(self._data_dir)
        records = journal.load()
        if records:
            batch = journal_commands(records, self.service.name)
        else:
            batch = default_commands(self._broker.config)
        try:
            reply = await self.service.submit(batch)
        except ClusterError as error:
            raise StartupError(
                EX_UNAVAILABLE, f"cannot store this node's first definitions: {error}"
            ) from None
        statuses = reply.get("statuses", [])
        if records:
            journal.path.rename(journal.path.with_name(journal.path.name + ".imported"))
            log.info(
                "imported %d definition(s) of %s into the replicated store (%d refused)",
                len(statuses),
                journal.path,
                statuses.count("error"),
            )

    async def _forget_transient_exchanges(self) -> None:
        """RabbitMQ keeps a non-durable exchange while any node of its cluster runs: a node that
        starts as the only member of its cluster is the whole cluster starting again."""
        try:
            await self.service.read_barrier()
        except ClusterError as error:
            log.info("transient exchanges stay for now: %s", error)
            return
        if self.service.status().voters != (self.service.name,):
            return
        state = self.service.metadata
        transient = tuple(
            DeleteExchange(vhost=record.vhost, name=record.name)
            for record in state.exchanges()
            if not record.durable
        )
        if transient:
            await self.service.submit(Batch(commands=transient))

    def _write_marker(self) -> None:
        self._marker.parent.mkdir(parents=True, exist_ok=True)
        self._marker.write_text("definitions are kept by the cluster's replicated store\n")

    async def _wait_first_definitions(self) -> None:
        """A node that just joined has no definitions until the cluster's arrive."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + _FIRST_DEFINITIONS_SECONDS
        while not self._broker.vhosts and loop.time() < deadline:
            await asyncio.sleep(0.05)

    async def _finish_recovery_when_caught_up(self) -> None:
        """The messages of queues deleted while this node was down, and stored bodies no queue
        refers to, may go once every queue of this node is open: which is known only when the
        log is applied up to the cluster's commit."""
        while True:
            try:
                await self.service.read_barrier()
            except ClusterError as error:
                log.debug("not caught up with the cluster yet: %s", error)
                await asyncio.sleep(1.0)
                continue
            stores = self._broker.stores
            if stores is not None:
                for vhost in self._broker.vhosts.values():
                    durable = {name for name, queue in vhost.queues.items() if queue.store}
                    stores.forget_unknown_queues(vhost.name, durable)
                stores.finish_recovery()
            return


def _is_empty(directory: Path) -> bool:
    return not directory.exists() or not any(directory.iterdir())
