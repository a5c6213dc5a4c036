"""How the cluster layer plugs into the management API: one control per node's broker."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..broker import Broker


class ClusterControl(Protocol):
    """What the management API needs from the cluster layer (cluster.management)."""

    def status_report(self) -> dict[str, Any]: ...

    def node_entries(self) -> dict[str, dict[str, Any]]: ...

    def start_submit(self, command: dict[str, Any]) -> str: ...

    def start_read_barrier(self) -> str: ...

    def start_forget(self, node: str) -> str: ...

    def ticket(self, ticket: str) -> dict[str, Any] | None: ...

    def metadata(self, table: str | None = None) -> dict[str, Any] | None: ...

    def peer_links(self) -> list[dict[str, Any]]:
        """The federation links the other running nodes last gossiped, in the API's fields."""
        ...

    def majority_text(self) -> str | None:
        """None while this node reaches a majority of the voters, else why it does not."""
        ...

    def queue_report(self, node: str, vhost: str, name: str) -> tuple[bool, dict[str, int]]:
        """Whether `node` is up, and the counters it last gossiped for its queue."""
        ...


_controls: weakref.WeakKeyDictionary[Any, ClusterControl] = weakref.WeakKeyDictionary()


def attach_cluster(broker: Broker, control: ClusterControl) -> None:
    """Serve `control`'s cluster on the management API of `broker`'s node."""
    _controls[broker] = control


def detach_cluster(broker: Broker) -> None:
    _controls.pop(broker, None)


def cluster_control(broker: Broker) -> ClusterControl | None:
    """The cluster of `broker`'s node, when it runs one."""
    return _controls.get(broker)
