"""Federation as a node extension: upstream parameters checked, links run, status served."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .supervisor import FederationSupervisor
from .upstreams import UPSTREAM, UPSTREAM_SET, validate_upstream, validate_upstream_set

if TYPE_CHECKING:
    from leveret.broker import Broker


class FederationPlugin:
    """Made by the node when it is assembled (see leveret.server.node.Federation)."""

    def __init__(self, broker: Broker) -> None:
        broker.registry.register_component(UPSTREAM, validate_upstream)
        broker.registry.register_component(UPSTREAM_SET, validate_upstream_set)
        self._broker = broker
        self.supervisor = FederationSupervisor(broker)

    async def start(self) -> None:
        self._broker.federation = self.supervisor
        self.supervisor.start()

    async def stop(self) -> None:
        self._broker.federation = None
        await self.supervisor.stop()
