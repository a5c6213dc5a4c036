"""A queue whose home is another node of the cluster, as this node knows it from the metadata."""

from __future__ import annotations

from dataclasses import dataclass

from ..declare_rules import QueueDecl


@dataclass(frozen=True, slots=True)
class RemoteQueue:
    name: str
    vhost: str
    home_node: str
    decl: QueueDecl
    # The owning connection of an exclusive queue, as the cluster names it ("node/number").
    exclusive_owner: str | None = None
