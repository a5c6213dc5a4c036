"""A virtual host: its exchanges, queues and bindings, and the declare / bind / route operations."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from . import declare_rules as rules
from .amqp.fields import argument_types
from .dead_letter import dead_lettered, is_cycle
from .definitions_log import DefinitionsLog, decode_arguments, encode_arguments
from .exchanges import exchange_type
from .exchanges.base import Binding
from .exchanges.exchange import Exchange, predeclared_exchanges, unbind_everywhere
from .message import Message
from .persistence import MessageStores
from .queues.classic import ClassicQueue
from .queues.remote import ConfirmWaiter, HomeLink, HomeLinks, RemoteQueue, by_home_node
from .routing import route
from .shared_commands import delete_queue as delete_queue_command
from .shared_metadata import SharedMetadata


class VirtualHost:
    def __init__(
        self,
        name: str,
        *,
        definitions: DefinitionsLog | None = None,
        stores: MessageStores | None = None,
    ) -> None:
        self.name = name
        self.exchanges: dict[str, Exchange] = predeclared_exchanges()
        self.queues: dict[str, ClassicQueue] = {}
        # On a clustered node: the queues whose home is another node, and the shared store
        # that decides every change (the cluster applies them here; see shared_metadata).
        self.remote_queues: dict[str, RemoteQueue] = {}
        self.shared: SharedMetadata | None = None
        # The links to the home nodes of remote queues (set with `shared`).
        self.links: HomeLinks | None = None
        self.definitions = definitions
        self.stores = stores
        # Told of each new queue and exchange, so that policies apply to them from the start.
        self.on_queue_created: Callable[[ClassicQueue], None] | None = None
        self.on_exchange_created: Callable[[Exchange], None] | None = None

    # --- exchanges ----------------------------------------------------------------------------

    def declare_exchange(
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
    ) -> Exchange:
        name = rules.strip_cr_lf(name)
        requested = self.check_exchange_declare(
            name,
            type_name,
            passive=passive,
            durable=durable,
            auto_delete=auto_delete,
            internal=internal,
            arguments=arguments,
            method=method,
        )
        if requested is None:
            return self.exchanges[name]
        return self.create_exchange(name, requested)

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
        if requested.durable and self.definitions is not None:
            self.definitions.put(exchange_record(self.name, exchange))
        return exchange

    def delete_exchange(self, name: str, *, if_unused: bool, method: tuple[int, int]) -> None:
        name = rules.strip_cr_lf(name)
        exchange = self.exchanges.get(name)
        exists = rules.check_exchange_delete(
            name,
            exists=exchange is not None,
            if_unused=if_unused,
            has_bindings_as_source=exchange is not None and exchange.has_bindings(),
            vhost=self.name,
            method=method,
        )
        if exists and exchange is not None:
            self.remove_exchange(exchange)

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
                self._forget_binding(binding)
            removed, unused = unbind_everywhere(self.exchanges.values(), "exchange", current.name)
            for binding in removed:
                self._forget_binding(binding)
            doomed.extend(unused)
            if current.durable and self.definitions is not None:
                self.definitions.delete(exchange_record(self.name, current))

    def restore_exchange(self, record: dict[str, Any]) -> None:
        """Recreate a durable exchange from its definition at boot."""
        decl = rules.ExchangeDecl(
            record["type"],
            True,
            record["auto_delete"],
            record["internal"],
            decode_arguments(record["arguments"]),
            dict(record["argument_types"]),
        )
        self.exchanges[record["name"]] = Exchange.from_decl(record["name"], decl)

    def restore_binding(self, record: dict[str, Any]) -> None:
        source = self.exchanges.get(record["source"])
        if source is None or not self.has_destination(
            record["destination_kind"], record["destination"]
        ):
            return  # an end was deleted after the binding was written
        source.add_binding(
            Binding.of(
                record["source"],
                record["destination"],
                record["destination_kind"],
                record["routing_key"],
                decode_arguments(record["arguments"]),
            )
        )

    # --- queues -------------------------------------------------------------------------------

    def declare_queue(
        self,
        name: str,
        *,
        passive: bool,
        durable: bool,
        exclusive: bool,
        auto_delete: bool,
        arguments: dict[str, Any],
        owner: Any,
        method: tuple[int, int],
    ) -> ClassicQueue:
        name = rules.strip_cr_lf(name)
        server_named = not name and not passive
        if server_named:
            name = rules.server_named_queue_name()
        requested = rules.QueueDecl(
            durable, exclusive, auto_delete, arguments, argument_types(arguments)
        )
        existing = self.queues.get(name)
        create = rules.check_queue_declare(
            name,
            requested,
            passive=passive,
            existing=_decl_of(existing) if existing is not None else None,
            owner=existing.exclusive_owner if existing is not None else None,
            connection=owner,
            server_named=server_named,
            vhost=self.name,
            method=method,
        )
        if not create:
            assert existing is not None
            existing.touch()  # a redeclare, passive or not, renews an x-expires lease
            return existing
        stored = requested.as_stored()
        queue = self.add_queue(
            name,
            durable=stored.durable,
            exclusive_owner=owner if exclusive else None,
            auto_delete=auto_delete,
            arguments=dict(arguments),
            argument_types=dict(requested.argument_types),
        )
        if exclusive:
            owner.exclusive_queues.add(name)
        elif queue.durable and self.definitions is not None:
            self.definitions.put(queue_record(self.name, queue))
        return queue

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
        removed, unused = unbind_everywhere(self.exchanges.values(), "queue", name)
        for binding in removed:
            self._forget_binding(binding)
        for exchange in unused:
            self.remove_exchange(exchange)
        if queue.durable and owner is None and self.definitions is not None:
            self.definitions.delete(queue_record(self.name, queue))
        return queue.delete()

    def _auto_delete(self, queue: ClassicQueue) -> None:
        if self.queues.get(queue.name) is not queue:
            return
        if self.shared is not None:
            # The cluster decides; the queue goes when its deletion is applied here.
            owner = queue.exclusive_owner
            owner_tag = owner.owner_tag if owner is not None else None
            self.shared.submit_eventually(delete_queue_command(self.name, queue.name, owner_tag))
            return
        self.delete_queue(queue.name)

    def _dead_letter(self, queue: ClassicQueue, message: Message, reason: str) -> None:
        """Republish a message that died in `queue` to the queue's dead-letter exchange."""
        settings = queue.settings
        exchange_name = settings.dead_letter_exchange
        if exchange_name is None or exchange_name not in self.exchanges:
            return  # RabbitMQ drops it when the dead-letter exchange does not exist
        routing_key = settings.dead_letter_routing_key or message.routing_key
        copy = dead_lettered(message, queue.name, reason, exchange_name, routing_key)
        headers = copy.properties.headers if exchange_name else None
        remote: list[RemoteQueue] = []
        for target in self.route_unchecked(exchange_name, routing_key, headers):
            if is_cycle(copy, target.name):
                continue
            if type(target) is RemoteQueue:
                remote.append(target)
            elif not target.deleted:  # type: ignore[union-attr]
                target.publish(copy)  # type: ignore[union-attr]
        if remote:
            self.forward(remote, copy)

    # --- bindings -----------------------------------------------------------------------------

    def has_destination(self, kind: str, name: str) -> bool:
        if kind == "queue":
            return name in self.queues or name in self.remote_queues
        return name in self.exchanges

    def bind(
        self,
        source: str,
        destination: str,
        kind: str,
        routing_key: str,
        arguments: dict[str, Any],
        method: tuple[int, int],
    ) -> None:
        rules.check_bind(
            source,
            destination,
            kind,
            source_exists=source in self.exchanges,
            destination_exists=self.has_destination(kind, destination),
            vhost=self.name,
            method=method,
        )
        exchange = self.exchanges[source]
        binding = Binding.of(source, destination, kind, routing_key, arguments)  # type: ignore[arg-type]
        exchange.validate_binding(binding, method)
        if (
            exchange.add_binding(binding)
            and self._is_durable(binding)
            and self.definitions is not None
        ):
            self.definitions.put(binding_record(self.name, binding, arguments))

    def unbind(
        self,
        source: str,
        destination: str,
        kind: str,
        routing_key: str,
        arguments: dict[str, Any],
        method: tuple[int, int],
    ) -> None:
        rules.check_unbind(source, destination, kind, method)
        exchange = self.exchanges.get(source)
        if exchange is None:
            return
        binding = Binding.of(source, destination, kind, routing_key, arguments)  # type: ignore[arg-type]
        if not exchange.remove_binding(binding):
            return
        self._forget_binding(binding)
        if exchange.auto_delete and not exchange.has_bindings():
            self.remove_exchange(exchange)

    def _is_durable(self, binding: Binding) -> bool:
        """RabbitMQ keeps a binding across restarts when both of its ends are durable."""
        source = self.exchanges.get(binding.source)
        if source is None or not source.durable:
            return False
        if binding.destination_kind == "queue":
            queue = self.queues.get(binding.destination)
            return queue is not None and queue.durable and queue.exclusive_owner is None
        destination = self.exchanges.get(binding.destination)
        return destination is not None and destination.durable

    def _forget_binding(self, binding: Binding) -> None:
        if self.definitions is not None and self._is_durable(binding):
            self.definitions.delete(binding_record(self.name, binding, binding.argument_table()))

    # --- routing ------------------------------------------------------------------------------

    def route(
        self,
        exchange_name: str,
        routing_key: str,
        message: Message,
        method: tuple[int, int],
        extra_routing_keys: tuple[str, ...] = (),
    ) -> list[ClassicQueue | RemoteQueue]:
        """The queues `message` goes to: this node's, and those homed on other nodes."""
        exchange = self.exchanges.get(exchange_name)
        rules.check_publish_exchange(
            exchange_name,
            exists=exchange is not None,
            internal=exchange is not None and exchange.internal,
            vhost=self.name,
            method=method,
        )
        headers = message.properties.headers if message.has_flags else None
        return self.route_unchecked(exchange_name, routing_key, headers, extra_routing_keys)

    def route_unchecked(
        self,
        exchange_name: str,
        routing_key: str,
        headers: dict[str, Any] | None,
        extra_routing_keys: tuple[str, ...] = (),
    ) -> list[ClassicQueue | RemoteQueue]:
        """As `route`, for an exchange known to exist (dead-lettering)."""
        queues = self.queues
        remote = self.remote_queues
        if not exchange_name and not extra_routing_keys:
            queue: ClassicQueue | RemoteQueue | None = queues.get(routing_key)
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

    def forward(
        self,
        queues: list[RemoteQueue],
        message: Message,
        waiter: ConfirmWaiter | None = None,
        seq: int = 0,
    ) -> list[HomeLink]:
        """Send `message` to the home nodes of `queues` that are up; the links it went on.

        `waiter` hears as each home node takes it (dead-lettering, as RabbitMQ's, passes none)."""
        links = self.links
        if links is None:
            return []
        sent = []
        for home, names in by_home_node(queues).items():
            link = links.link(home)
            if link.up:
                link.publish(self.name, names, message, waiter, seq)
                sent.append(link)
        return sent


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


def exchange_record(vhost: str, exchange: Exchange) -> dict[str, Any]:
    return {
        "kind": "exchange",
        "vhost": vhost,
        "name": exchange.name,
        "type": exchange.type,
        "auto_delete": exchange.auto_delete,
        "internal": exchange.internal,
        "arguments": encode_arguments(dict(exchange.arguments)),
        "argument_types": dict(exchange.argument_types or {}),
    }


def queue_record(vhost: str, queue: ClassicQueue) -> dict[str, Any]:
    return {
        "kind": "queue",
        "vhost": vhost,
        "name": queue.name,
        "auto_delete": queue.auto_delete,
        "arguments": encode_arguments(queue.arguments),
        "argument_types": queue.argument_types,
    }


def binding_record(vhost: str, binding: Binding, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": "binding",
        "vhost": vhost,
        "source": binding.source,
        "destination": binding.destination,
        "destination_kind": binding.destination_kind,
        "routing_key": binding.routing_key,
        "arguments": encode_arguments(dict(arguments)),
    }
