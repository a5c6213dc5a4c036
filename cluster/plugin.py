"""How a node runs its cluster service: started with the node, stopped before it."""

from __future__ import annotations

from typing import Any

from cluster.gossip.local_report import broker_report
from cluster.management import ClusterManagement
from cluster.service import ClusterService
from cluster.settings import ClusterSettings
from leveret.mgmt.api_cluster import attach_cluster, detach_cluster


class ClusterPlugin:
    """The node's cluster service and its management view."""

    def __init__(self, config: Any, broker: Any) -> None:
        settings = ClusterSettings.from_config(config)
        self._broker = broker
        self.service = ClusterService(
            settings, report_source=lambda: broker_report(broker, settings.data_dir)
        )
        self._management = ClusterManagement(self.service, lambda: broker.config.cluster_name)

    @property
    def port(self) -> int:
        return self.service.port

    async def start(self) -> None:
        await self.service.start()
        attach_cluster(self._broker, self._management)

    async def stop(self) -> None:
        """Hands leadership over first, when this node leads."""
        detach_cluster(self._broker)
        self._management.close()
        await self.service.stop()


async def start_cluster(config: Any, broker: Any) -> ClusterPlugin:
    """Start the cluster service of the node with `config` and `broker`."""
    plugin = ClusterPlugin(config, broker)
    await plugin.start()
    return plugin
