"""How a node runs its cluster service: started with the node, stopped before it.

A node keeps its definitions in its own journal while it runs alone. Once it is part of a
cluster (it joined one, or another node joined it), the cluster's replicated store decides
them: the broker submits every change there, and the mirror applies what the store commits to
the broker's model. A marker file in the data directory remembers that across restarts.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from cluster.errors import ClusterError
from cluster.management import ClusterManagement
from cluster.metadata.commands import Effect
from cluster.secret import SecretError
from cluster.service import ClusterService
from cluster.settings import ClusterSettings

from ..mgmt.cluster_link import attach_cluster, detach_cluster
from ..server.node import StartupError
from ..sysexits import EX_CONFIG
from .broker_mirror import BrokerMirror
from .definitions_import import import_command
from .local_report import broker_report
from .metadata_store import ClusterMetadata
from .queue_link import QueueLinks
from .queue_service import QueuesServicer

log = logging.getLogger(__name__)

# How long a node that joins a cluster for the first time waits for its definitions to arrive
# before it accepts clients anyway.
_FIRST_DEFINITIONS_SECONDS = 10.0


class ClusterPlugin:
    """The node's cluster service, its management view, and the shared definitions."""

    def __init__(self, config: Any, broker: Any) -> None:
        try:
            settings = ClusterSettings.from_config(config)
        except SecretError as error:
            raise StartupError(EX_CONFIG, str(error)) from None
        self._broker = broker
        self._queues = QueuesServicer(broker)
        self.service = ClusterService(
            settings,
            report_source=lambda: broker_report(broker, settings.data_dir),
            services=[self._queues.install],
        )
        self._links: QueueLinks | None = None
        self._management = ClusterManagement(self.service, lambda: broker.config.cluster_name)
        self.shared = ClusterMetadata(self.service)
        self._mirror = BrokerMirror(broker, self.shared, lambda: self.service.metadata)
        self._marker = settings.data_dir / "cluster" / "shares-definitions"
        joining_fresh = bool(settings.join) and _is_empty(settings.raft_dir)
        self.shares_definitions = self._marker.exists() or joining_fresh
        # A node that joins brings no definitions of its own (RabbitMQ resets a joining node).
        self._imported = self.shares_definitions
        self._import: dict[str, Any] = {}
        self._catch_up: asyncio.Task[None] | None = None
        self.service.on_effects(self._on_effects)
        self.service.machine.on_reset(lambda _state: self._on_reset())
        self.service.before_admitting = self._share_definitions

    @property
    def port(self) -> int:
        return self.service.port

    async def start(self) -> None:
        if self.shares_definitions:
            self._broker.share_metadata(self.shared)
            self._write_marker()
        await self.service.start()
        self._links = QueueLinks(self.service.address_of, self.service.peers)
        self._broker.link_queues(self._links)
        attach_cluster(self._broker, self._management)
        if self.shares_definitions:
            self._mirror.rebuild()
            self._catch_up = asyncio.get_running_loop().create_task(
                self._finish_recovery_when_caught_up(), name="cluster-catch-up"
            )
            await self._wait_first_definitions()

    async def stop(self) -> None:
        """Hands leadership over first, when this node leads."""
        if self._catch_up is not None:
            self._catch_up.cancel()
            await asyncio.gather(self._catch_up, return_exceptions=True)
        await self.shared.stop()
        self._broker.link_queues(None)
        if self._links is not None:
            await self._links.close()
        detach_cluster(self._broker)
        self._management.close()
        await self.service.stop()

    # -- the shared definitions ------------------------------------------------------------

    def _on_effects(self, effects: list[Effect]) -> None:
        if self.shares_definitions:
            self._mirror.apply(effects)

    def _on_reset(self) -> None:
        if self.shares_definitions:
            self._mirror.rebuild()

    async def _share_definitions(self) -> None:
        """Before this node (the leader) admits another: if it ran alone until now, its
        definitions become the cluster's, and the cluster decides them from now on."""
        if not self.shares_definitions:
            # Switch first, in the same step as the snapshot of the model: a change made after
            # it goes through the cluster, ordered after the import.
            self.shares_definitions = True
            self._broker.share_metadata(self.shared)
            self._import = import_command(self._broker, self.service.name)
        if not self._imported:
            reply = await self.service.submit(self._import)
            self._imported = True
            self._write_marker()
            log.info(
                "this node's definitions are the cluster's now (%d imported)",
                len(reply.get("statuses", [])),
            )

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
        """Shared message bodies no queue refers to may go once every queue of this node is
        open, which is known only when the log is applied up to the cluster's commit."""
        while True:
            try:
                await self.service.read_barrier()
            except ClusterError as error:
                log.debug("not caught up with the cluster yet: %s", error)
                await asyncio.sleep(1.0)
                continue
            if self._broker.stores is not None:
                self._broker.stores.finish_recovery()
            return


def _is_empty(directory: Path) -> bool:
    return not directory.exists() or not any(directory.iterdir())
