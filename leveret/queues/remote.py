"""Queues homed on other nodes: their metadata record, and what the core asks of the link to them.

A channel that uses a remote queue talks to a `HomeLink`: the cluster layer's connection to the
queue's home node (leveret/clustering/queue_link.py). The home node runs the queue; this node
only forwards publishes, settlements and requests, and hands deliveries to its clients.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import dataclass
from enum import IntEnum
from typing import TYPE_CHECKING, Any, Protocol

from ..declare_rules import QueueDecl

if TYPE_CHECKING:
    from ..message import Message
    from .entry import QueueEntry


@dataclass(frozen=True, slots=True)
class RemoteQueue:
    name: str
    vhost: str
    home_node: str
    decl: QueueDecl
    # The owning connection of an exclusive queue, as the cluster names it ("node/number").
    exclusive_owner: str | None = None


def by_home_node(queues: list[RemoteQueue]) -> dict[str, list[str]]:
    """The names of `queues` grouped by their home node."""
    grouped: dict[str, list[str]] = {}
    for queue in queues:
        grouped.setdefault(queue.home_node, []).append(queue.name)
    return grouped


class Outcome(IntEnum):
    """How a delivery was settled (the values of queues.proto's Outcome)."""

    ACK = 0
    REJECT = 1
    REQUEUE = 2


class RequestKind(IntEnum):
    """One-off operations on a remote queue, or on another node's client connections for the
    management API (the values of queues.proto's RequestKind)."""

    STATUS = 0
    GET = 1
    PURGE = 2
    VIEW = 3
    CLIENTS = 4
    CLOSE_CONNECTION = 5


@dataclass(frozen=True, slots=True)
class QueueStatus:
    """The home node's answer to a request: an AMQP error code (0 if none) and the counts."""

    code: int
    text: str
    message_count: int = 0
    consumer_count: int = 0
    delivery: QueueEntry | None = None  # a get's message; its seq names it for settling
    unacked_count: int = 0
    view: bytes = b""  # a VIEW's answer: the queue's management JSON on its home node


class ConfirmWaiter(Protocol):
    """A publisher that waits for the home node to take its message."""

    def confirmed(self, seqs: list[int], taken: bool) -> None:
        """The home node took the publishes `seqs` (0s in a transaction), or could not."""
        ...


class RemoteSubscriber(Protocol):
    """The client side of a consumer of a remote queue (see remote_consumer.py)."""

    def delivered(self, entries: list[QueueEntry]) -> None:
        """Deliveries from the home node, in its order."""
        ...

    def cancelled_by_home(self) -> None: ...


class LinkDown(Exception):
    """The home node cannot be reached: it is down, or the link to it broke."""


class HomeLink(Protocol):
    """This node's link to the home node of some queues."""

    # Deliveries are named by ids valid for one session of the link; a new one after a break.
    generation: int
    # Publishing connections held back while the link is congested (see Session.throttle).
    throttled: set[Any]
    # Whether the home node's queues that took the last publishes have consumers falling behind.
    queues_congested: bool

    @property
    def up(self) -> bool:
        """Whether the home node is reachable now (publishes to it are not lost in advance)."""
        ...

    @property
    def congested(self) -> bool: ...

    def publish(
        self,
        vhost: str,
        queues: list[str],
        message: Message,
        waiter: ConfirmWaiter | None,
        seq: int,
    ) -> None:
        """Forward `message` to `queues`; tell `waiter` once the home node took it."""
        ...

    def subscribe(
        self,
        subscriber: RemoteSubscriber,
        vhost: str,
        queue: str,
        tag: str,
        *,
        no_ack: bool,
        exclusive: bool,
        priority: int,
        prefetch: int,
        arguments: dict[str, Any],
        framing: tuple[int, int] = (0, 0),
    ) -> Awaitable[int]:
        """Start a consumer on the home node; resolves to its id on the link, or raises
        AMQPError with the home node's refusal, or LinkDown. `framing`: the channel number and
        frame_max its deliveries come framed for ((0, 0): unframed)."""
        ...

    def direct_reply(self, address: str, message: Message) -> None:
        """Hand a reply to the requester's channel that `address` names on the node (dropped
        if the node or the requester is gone)."""
        ...

    def direct_reply_mandatory(self, address: str, message: Message) -> Awaitable[bool]:
        """As `direct_reply`; resolves to whether it reached the requester."""
        ...

    def reach(self) -> Awaitable[None]:
        """Returns once the home node can be reached; raises LinkDown when it cannot."""
        ...

    def cancel(self, consumer: int) -> asyncio.Future[None]:
        """Stop `consumer` on the home node; resolves once the home node has (or the link
        broke). Deliveries to it that come meanwhile still go to its subscriber."""
        ...

    def grant(self, consumer: int, credit: int) -> None:
        """The home node may send `credit` more deliveries to `consumer`."""
        ...

    def settle(self, outcome: Outcome, deliveries: list[int]) -> None: ...

    def request(
        self,
        kind: RequestKind,
        vhost: str,
        queue: str,
        *,
        no_ack: bool = False,
        view_query: str = "",
        name: str = "",
        reason: str = "",
    ) -> Awaitable[QueueStatus]:
        """Ask the home node; raises LinkDown when it cannot answer."""
        ...


class HomeLinks(Protocol):
    """The links of this node to the others, by node name (set on the broker when clustered)."""

    def link(self, node: str) -> HomeLink: ...
