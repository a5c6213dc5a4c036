"""What a channel does with a queue, whatever its type (as RabbitMQ's rabbit_queue_type).

Routing returns queue references: a `ClassicQueue` of this node, or the `RemoteQueue` record of
one homed on another node. `deliver` hands a message to each in its type's way and tells the
publisher how its confirm will come: a local queue says whether it waits for the disk or was
refused; queues of other nodes get one copy per home node, which confirms it later.

Everything else a channel does with one queue goes through a `QueueClient` (local_type.py,
remote_type.py): each operation answers through a callback, at once for this node's queues, or
once the home node has answered, and returns what the channel must wait for until then.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from .classic import ClassicQueue, Confirming
from .remote import ConfirmWaiter, HomeLink, HomeLinks, RemoteQueue, by_home_node

if TYPE_CHECKING:
    from ..message import Message
    from ..persistence import MessageStores
    from .classic import Consumer, DeliverySink
    from .entry import QueueEntry

# What routing returns: a queue of this node, or one homed on another node.
QueueRef = ClassicQueue | RemoteQueue

# What an operation of a queue of another node leaves the channel to wait for (None: done).
Pending = Awaitable[None] | None


class Settles(Protocol):
    """Where a delivery is settled: the queue itself, or a handle on a remote one."""

    @property
    def deleted(self) -> bool: ...

    @property
    def stream(self) -> bool: ...

    @property
    def name(self) -> str: ...

    @property
    def vhost(self) -> str: ...

    def settle(self, entry: QueueEntry) -> None: ...

    def settle_all(self, entries: list[QueueEntry]) -> None:
        """`settle` for each of `entries` (a channel's acks of one read, mostly)."""
        ...

    def reject(self, entry: QueueEntry) -> None: ...

    def requeue(self, entries: list[QueueEntry]) -> None: ...

    def dispatch(self) -> None:
        """The channel can take more deliveries."""
        ...

    def remove_consumer(self, consumer: Consumer) -> Awaitable[None] | None:
        """Stop `consumer`; an awaitable when that takes another node's answer (basic.cancel-ok
        waits for it), else None."""
        ...


class QueueClient(Protocol):
    """One queue as a channel uses it, for one operation (rabbit_queue_type's callbacks)."""

    @property
    def name(self) -> str: ...

    @property
    def stream(self) -> bool:
        """Whether the queue is a stream (x-queue-type stream)."""
        ...

    def status(self, then: Callable[[int, int], None]) -> Pending:
        """`then(message count, consumer count)`; renews an x-expires lease."""
        ...

    def purge(self, then: Callable[[int], None]) -> Pending:
        """`then(messages purged)`."""
        ...

    def get(self, no_ack: bool, then: Callable[[Settles, QueueEntry | None, int], None]) -> Pending:
        """`then(where to settle it, the entry or None if empty, messages left)`."""
        ...

    def check_consume(self, exclusive: bool) -> None:
        """Raises what refuses a consumer before anything else of it is checked."""
        ...

    def consume(
        self,
        sink: DeliverySink,
        tag: str,
        *,
        no_ack: bool,
        exclusive: bool,
        priority: int,
        prefetch: int,
        limit: int,
        arguments: dict[str, Any],
        then: Callable[[Consumer], None],
    ) -> Pending:
        """A consumer: `then(consumer)` (where the channel says consume-ok), after which its
        deliveries start. `limit` bounds its unacknowledged deliveries (0: none)."""
        ...


class Publisher(Confirming, ConfirmWaiter, Protocol):
    """A channel publishing: how each queue takes its messages, and when to slow down."""

    # Whether it waits for confirms (confirm mode, or a transaction's commit).
    wants_confirms: bool

    def expect(self, seq: int) -> None:
        """A home node will confirm `seq` later (see ConfirmWaiter.confirmed)."""
        ...

    def congested(self, queue: ClassicQueue) -> None:
        """`queue`'s consumers fall behind (it is `flow_blocked` when they cannot keep up)."""
        ...

    def throttle(self, link: HomeLink) -> None:
        """The link to a home node is congested: read no more until it releases the publisher."""
        ...

    def home_congested(self) -> None:
        """Queues of another node it publishes to fall behind: it gets smaller turns, as for
        `congested`, so that their consumers (perhaps on this node) get the time."""
        ...


class Destinations(Protocol):
    """Where the queues live: the virtual host, its links to other nodes, its message stores."""

    name: str
    links: HomeLinks | None
    stores: MessageStores | None


def deliver(
    vhost: Destinations,
    queues: Sequence[QueueRef],
    message: Message,
    publisher: Publisher | None = None,
    seq: int = 0,
) -> bool:
    """Hand `message` to `queues`; False if none could take it, all homed on nodes that are down
    (the message is dropped, as RabbitMQ's: returned when mandatory, confirmed all the same)."""
    confirming = publisher if publisher is not None and publisher.wants_confirms else None
    if len(queues) > 1:
        _share_body(vhost, queues, message)
    remote: list[RemoteQueue] | None = None
    taken = False
    for queue in queues:
        if type(queue) is RemoteQueue:
            if remote is None:
                remote = [queue]
            else:
                remote.append(queue)
            continue
        local: ClassicQueue = queue  # type: ignore[assignment]
        taken = True
        if local.deleted:
            continue
        local.deliver(message, confirming, seq)
        if local.congested and publisher is not None:
            publisher.congested(local)
    if remote is not None:
        for link in forward(vhost, remote, message, confirming, seq):
            taken = True
            if confirming is not None:
                confirming.expect(seq)
            if publisher is not None:
                if link.congested:
                    publisher.throttle(link)
                elif link.queues_congested:
                    publisher.home_congested()
    return taken


def forward(
    vhost: Destinations,
    queues: list[RemoteQueue],
    message: Message,
    waiter: ConfirmWaiter | None = None,
    seq: int = 0,
) -> list[HomeLink]:
    """Send `message` to the home nodes of `queues` that are up; the links it went on.

    `waiter` hears as each home node takes it (dead-lettering, as RabbitMQ's, passes none)."""
    links = vhost.links
    if links is None:
        return []
    if len(queues) == 1:  # the common case, without grouping
        queue = queues[0]
        link = links.link(queue.home_node)
        if not link.up:
            return []
        link.publish(vhost.name, [queue.name], message, waiter, seq)
        return [link]
    sent = []
    for home, names in by_home_node(queues).items():
        link = links.link(home)
        if link.up:
            link.publish(vhost.name, names, message, waiter, seq)
            sent.append(link)
    return sent


def _share_body(vhost: Destinations, queues: Sequence[QueueRef], message: Message) -> None:
    """One copy of a large persistent body for every durable queue of this node it goes to."""
    stores = vhost.stores
    if stores is None or not message.persistent or len(message.body) < stores.embed_threshold:
        return
    durable = sum(1 for q in queues if type(q) is ClassicQueue and q.store is not None)
    if durable > 1:
        message.stored_body = stores.shared(vhost.name).share(message.body)
