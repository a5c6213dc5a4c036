"""What the federation extension shows of its links to the management API, metrics and gossip."""

from __future__ import annotations

from typing import Any, Protocol


class FederationLinks(Protocol):
    """The links a node runs (federation.supervisor.FederationSupervisor)."""

    def describe(self) -> list[dict[str, Any]]:
        """Each link in /api/federation-links' fields, `node` included."""
        ...

    def restart(self, vhost: str, link: str) -> bool:
        """Reconnect the link with id `link` in `vhost`; False when this node runs none."""
        ...
