"""What the management API needs of the running node for its probes and the drain
(leveret.server.node.Node provides it)."""

from __future__ import annotations

from typing import Protocol


class DrainOutcome(Protocol):
    """What a drain did: client connections closed, and those still waiting for confirms."""

    @property
    def closed_connections(self) -> int: ...

    @property
    def unconfirmed_connections(self) -> int: ...


class NodeControl(Protocol):
    """What the probes and the drain need of the running node (leveret.server.node.Node)."""

    @property
    def started(self) -> bool: ...

    @property
    def draining(self) -> bool: ...

    async def drain(self, timeout: float) -> DrainOutcome: ...
