"""A virtual host: its exchanges, queues and bindings, and the declare / bind / route operations."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from . import declare_rules as rules
from .amqp.fields import argument_types
from .dead_letter import dead_lettered, is_cycle
from .exchanges import exchange_type
from .exchanges.exchange import Exchange, predeclared_exchanges, unbind_everywhere
from .message import Message
from .metadata import MetadataStore
from .metadata_commands import delete_queue as delete_queue_command
from .persistence import MessageStores
from .queues import queue_type
from .queues.classic import ClassicQueue
from .queues.queue_type import QueueRef
from .queues.remote import HomeLinks, RemoteQueue
from .queues.stream import StreamQueue
from .queues.stream_retention import segment_size
from .routing import route


class VirtualHost:
    def __init__(
        self, name: str, metadata: MetadataStore, *, stores: MessageStores | None = None
    ) -> None:
        self.name = name
        self.exchanges: dict[str, Exchange] = predeclared_exchanges()
        self.queues: dict[str, ClassicQueue] = {}
        # The queues whose home is another node of the cluster.
        self.remote_queues: dict[str, RemoteQueue] = {}
        # Decides every change; the cluster applies them here (see metadata).
        self.metadata = metadata
        # The links to the home nodes of remote queues.
        self.links: HomeLinks | None = None
        self.stores = stores
        # Told of each new queue and exchange, so that policies apply to them from the start.
        self.on_queue_created: Callable[[ClassicQueue], None] | None = None
        self.on_exchange_created: Callable[[Exchange], None] | None = None

    # --- exchanges ----------------------------------------------------------------------------

    def check_exchange_declare(
        self,
        name: str,
        type_name: str,
        *,
        passive: bool,
        durable: bool,
        auto_delete: bool,
        internal: bool,
        arguments: dict[str, Any],
        method: tuple[int, int],
    ) -> rules.ExchangeDecl | None:
        """Check a declaration of exchange `name`; what to create, or None when it exists."""
        requested = rules.ExchangeDecl(
            type_name, durable, auto_delete, internal, arguments, argument_types(arguments)
        )
        existing = self.exchanges.get(name)
        create = rules.check_exchange_declare(
            name,
            requested,
            passive=passive,
            existing=existing.decl if existing is not None else None,
            vhost=self.name,
            known_types=exchange_type,
            method=method,
        )
        return requested if create else None

    def create_exchange(self, name: str, requested: rules.ExchangeDecl) -> Exchange:
        exchange = Exchange.from_decl(name, requested)
        self.exchanges[name] = exchange
        if self.on_exchange_created is not None:
            self.on_exchange_created(exchange)
        return exchange

    def remove_exchange(self, exchange: Exchange) -> None:
        """Delete an exchange, its bindings both ways, and auto-delete exchanges left unused."""
        doomed = [exchange]
        while doomed:
            current = doomed.pop()
            if self.exchanges.get(current.name) is not current:
                continue
            del self.exchanges[current.name]
            for binding in list(current.bindings()):
                current.remove_binding(binding)
            _, unused = unbind_everywhere(self.exchanges.values(), "exchange", current.name)
            doomed.extend(unused)

    # --- queues -------------------------------------------------------------------------------

    def add_queue(
        self,
        name: str,
        *,
        durable: bool,
        exclusive_owner: Any,
        auto_delete: bool,
        arguments: dict[str, Any],
        argument_types: dict[str, str],
    ) -> ClassicQueue:
        """Create a queue (a durable one with its store on disk, recovered if it has one)."""
        if arguments.get("x-queue-type") in ("stream", b"stream") and self.stores is not None:
            return self._add_stream(name, arguments, argument_types)
        store = None
        if durable and exclusive_owner is None and self.stores is not None:
            store = self.stores.open_queue(self.name, name)
        queue = ClassicQueue(
            name,
            self.name,
            durable=durable,
            exclusive_owner=exclusive_owner,
            auto_delete=auto_delete,
            arguments=arguments,
            store=store,
            timers=_running_loop(),
        )
        queue.argument_types = argument_types
        queue.on_unused = self._auto_delete
        queue.dead_letterer = self._dead_letter
        self.queues[name] = queue
        if self.on_queue_created is not None:
            self.on_queue_created(queue)
        return queue

    def _add_stream(
        self, name: str, arguments: dict[str, Any], argument_types: dict[str, str]
    ) -> ClassicQueue:
        assert self.stores is not None
        store = self.stores.open_stream(self.name, name, segment_size(arguments))
        queue = StreamQueue(
            name, self.name, arguments=arguments, store=store, timers=_running_loop()
        )
        queue.argument_types = argument_types
        self.queues[name] = queue
        if self.on_queue_created is not None:
            self.on_queue_created(queue)
        return queue

    def known_queue(self, name: str) -> tuple[rules.QueueDecl, Any] | None:
        """The declaration and exclusive owner of queue `name`, here or on another node (whose
        owners are the cluster's names for connections, never equal to a local session)."""
        queue = self.queues.get(name)
        if queue is not None:
            return _decl_of(queue), queue.exclusive_owner
        remote = self.remote_queues.get(name)
        if remote is not None:
            return remote.decl, remote.exclusive_owner
        return None

    def get_queue(self, name: str, method: tuple[int, int]) -> ClassicQueue:
        queue = self.queues.get(name)
        if queue is None:
            raise rules.not_found("queue", name, self.name, method)
        return queue

    def delete_queue(self, name: str) -> int:
        queue = self.queues.pop(name, None)
        if queue is None:
            return 0
        owner = queue.exclusive_owner
        if owner is not None:
            owner.exclusive_queues.discard(name)
        _, unused = unbind_everywhere(self.exchanges.values(), "queue", name)
        for exchange in unused:
            self.remove_exchange(exchange)
        return queue.delete()

    def _auto_delete(self, queue: ClassicQueue) -> None:
        if self.queues.get(queue.name) is not queue:
            return
        owner = queue.exclusive_owner
        owner_tag = owner.owner_tag if owner is not None else None
        # Gone here at once, as in RabbitMQ, whose clients may look for it right after their
        # basic.cancel-ok; the cluster forgets it as soon as it can decide.
        self.delete_queue(queue.name)
        self.metadata.submit_eventually(delete_queue_command(self.name, queue.name, owner_tag))

    def _dead_letter(self, queue: ClassicQueue, message: Message, reason: str) -> None:
        """Republish a message that died in `queue` to the queue's dead-letter exchange."""
        settings = queue.settings
        exchange_name = settings.dead_letter_exchange
        if exchange_name is None or exchange_name not in self.exchanges:
            return  # RabbitMQ drops it when the dead-letter exchange does not exist
        routing_key = settings.dead_letter_routing_key or message.routing_key
        copy = dead_lettered(message, queue.name, reason, exchange_name, routing_key)
        headers = copy.properties.headers if exchange_name else None
        targets = self.route_unchecked(exchange_name, routing_key, headers)
        # Unconfirmed, as RabbitMQ's: a queue of a node that is down loses it.
        queue_type.deliver(self, [t for t in targets if not is_cycle(copy, t.name)], copy)

    # --- bindings -----------------------------------------------------------------------------

    def has_destination(self, kind: str, name: str) -> bool:
        if kind == "queue":
            return name in self.queues or name in self.remote_queues
        return name in self.exchanges

    # --- routing ------------------------------------------------------------------------------

    def route(
        self,
        exchange_name: str,
        routing_key: str,
        headers: dict[str, Any] | None,
        method: tuple[int, int],
        extra_routing_keys: tuple[str, ...] = (),
    ) -> list[QueueRef]:
        """The queues a message with these `headers` goes to: this node's, and those homed on
        other nodes. (The publisher knows whether the message has properties at all.)"""
        exchange = self.exchanges.get(exchange_name)
        rules.check_publish_exchange(
            exchange_name,
            exists=exchange is not None,
            internal=exchange is not None and exchange.internal,
            vhost=self.name,
            method=method,
        )
        return self.route_unchecked(exchange_name, routing_key, headers, extra_routing_keys)

    def route_unchecked(
        self,
        exchange_name: str,
        routing_key: str,
        headers: dict[str, Any] | None,
        extra_routing_keys: tuple[str, ...] = (),
    ) -> list[QueueRef]:
        """As `route`, for an exchange known to exist (dead-lettering)."""
        queues = self.queues
        remote = self.remote_queues
        if not exchange_name and not extra_routing_keys:
            queue: QueueRef | None = queues.get(routing_key)
            if queue is None:
                queue = remote.get(routing_key)
            return [queue] if queue is not None else []
        if remote:
            known = _AnyQueue(queues, remote)
            names = route(
                self.exchanges, exchange_name, routing_key, headers, known, extra_routing_keys
            )
            return [queues[name] if name in queues else remote[name] for name in names]
        names = route(
            self.exchanges, exchange_name, routing_key, headers, queues, extra_routing_keys
        )
        return [queues[name] for name in names]


class _AnyQueue:
    """The names of local and remote queues together, for routing by the default exchange."""

    __slots__ = ("_local", "_remote")

    def __init__(self, local: dict[str, ClassicQueue], remote: dict[str, RemoteQueue]) -> None:
        self._local = local
        self._remote = remote

    def __contains__(self, name: object) -> bool:
        return name in self._local or name in self._remote


def _running_loop() -> asyncio.AbstractEventLoop | None:
    """Queues set their TTL timers on the node's loop (none when used without one, in tests)."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _decl_of(queue: ClassicQueue) -> rules.QueueDecl:
    return rules.QueueDecl(
        queue.durable,
        queue.exclusive_owner is not None,
        queue.auto_delete,
        queue.arguments,
        queue.argument_types,
    )
