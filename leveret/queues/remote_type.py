"""A queue of another node as a channel uses it: its home node answers over the link to it."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from .. import declare_rules as rules
from ..amqp.errors import AMQPError, not_found
from .classic import Consumer
from .remote import HomeLink, HomeLinks, LinkDown, QueueStatus, RemoteQueue, RequestKind
from .remote_consumer import RemoteQueueHandle

if TYPE_CHECKING:
    from .classic import DeliverySink
    from .entry import QueueEntry
    from .queue_type import Pending, Settles


class Owner(Protocol):
    """The channel using the queue: what comes back after it closed is given back."""

    @property
    def closed(self) -> bool: ...


class RemoteQueueClient:
    """The QueueClient of a RemoteQueue (see queue_type.py).

    Each operation first finds the link to the home node, raising RabbitMQ's 404 when that node
    is down (and 405 for another connection's exclusive queue), then returns the coroutine that
    waits for the home node's answer; its refusals are raised as the home node worded them."""

    __slots__ = ("_links", "_method", "_owner", "remote")

    def __init__(
        self,
        remote: RemoteQueue,
        links: HomeLinks | None,
        owner: Owner,
        method: tuple[int, int],
    ) -> None:
        self.remote = remote
        self._links = links
        self._owner = owner
        self._method = method  # the AMQP method its refusals name

    @property
    def name(self) -> str:
        return self.remote.name

    @property
    def stream(self) -> bool:
        return rules.is_stream(self.remote.decl.arguments)

    def link(self) -> HomeLink:
        """The link to the home node (whether that node answers, its requests find out)."""
        remote = self.remote
        if remote.exclusive_owner is not None:
            raise rules.exclusive_locked(remote.name, remote.vhost, self._method)
        if self._links is None:
            raise self._unreachable()
        return self._links.link(remote.home_node)

    async def reach(self) -> None:
        """RabbitMQ's 404 unless the home node can be reached now."""
        try:
            await self.link().reach()
        except LinkDown:
            raise self._unreachable() from None

    def _unreachable(self) -> AMQPError:
        remote = self.remote
        if remote.decl.durable:
            return rules.home_node_down(remote.name, remote.vhost, remote.home_node, self._method)
        # A transient queue does not outlive its node (RabbitMQ deletes it with the node).
        return not_found(f"no queue '{remote.name}' in vhost '{remote.vhost}'", self._method)

    async def request(self, link: HomeLink, kind: RequestKind, no_ack: bool = False) -> QueueStatus:
        """Ask the home node; its refusal, or its being down, is raised as AMQPError."""
        try:
            status = await link.request(kind, self.remote.vhost, self.remote.name, no_ack=no_ack)
        except LinkDown:
            raise self._unreachable() from None
        if status.code:
            raise AMQPError(status.code, status.text, self._method)
        return status

    def status(self, then: Callable[[int, int], None]) -> Pending:
        link = self.link()

        async def status() -> None:
            answer = await self.request(link, RequestKind.STATUS)
            if not self._owner.closed:
                then(answer.message_count, answer.consumer_count)

        return status()

    def purge(self, then: Callable[[int], None]) -> Pending:
        link = self.link()

        async def purge() -> None:
            answer = await self.request(link, RequestKind.PURGE)
            if not self._owner.closed:
                then(answer.message_count)

        return purge()

    def get(self, no_ack: bool, then: Callable[[Settles, QueueEntry | None, int], None]) -> Pending:
        link = self.link()
        # Made before asking, so that a link broken meanwhile cannot settle what it gives.
        handle = RemoteQueueHandle(link, self.remote.vhost, self.remote.name)
        handle.stream = self.stream

        async def get() -> None:
            answer = await self.request(link, RequestKind.GET, no_ack=no_ack)
            entry = answer.delivery
            if not self._owner.closed:
                then(handle, entry, answer.message_count)
            elif entry is not None:
                handle.requeue([entry])

        return get()

    def check_consume(self, exclusive: bool) -> None:
        """The home node decides exclusive use."""

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
        """The home node runs the consumer and streams its deliveries here, at most `limit`
        unacknowledged (its refusals, such as exclusive use, come back from there)."""
        link = self.link()
        remote = self.remote
        handle = RemoteQueueHandle(link, remote.vhost, remote.name)
        handle.stream = self.stream
        consumer = Consumer(
            tag,
            sink,
            handle,  # type: ignore[arg-type]
            no_ack=no_ack,
            exclusive=exclusive,
            priority=priority,
            prefetch=prefetch,
            arguments=arguments,
        )
        handle.consumer = consumer

        async def subscribe() -> None:
            try:
                handle.consumer_id = await link.subscribe(
                    handle,
                    remote.vhost,
                    remote.name,
                    tag,
                    no_ack=no_ack,
                    exclusive=exclusive,
                    priority=priority,
                    prefetch=limit,
                    arguments=arguments,
                    framing=sink.framing(),
                )
            except LinkDown:
                raise self._unreachable() from None
            except AMQPError as refused:
                raise AMQPError(refused.code, refused.text, self._method) from None
            if self._owner.closed:
                handle.remove_consumer(consumer)
                return
            then(consumer)
            handle.start()

        return subscribe()
