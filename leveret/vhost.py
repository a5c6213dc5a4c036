"""A virtual host: its exchanges, queues and bindings, and the declare / bind / route operations."""

from __future__ import annotations

from typing import Any

from . import declare_rules as rules
from .amqp.fields import argument_types
from .exchanges import exchange_type
from .exchanges.base import Binding
from .exchanges.exchange import Exchange, predeclared_exchanges, unbind_everywhere
from .message import Message
from .queues.classic import ClassicQueue
from .routing import route


class VirtualHost:
    def __init__(self, name: str) -> None:
        self.name = name
        self.exchanges: dict[str, Exchange] = predeclared_exchanges()
        self.queues: dict[str, ClassicQueue] = {}

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
        if not create:
            assert existing is not None
            return existing
        exchange = Exchange.from_decl(name, requested)
        self.exchanges[name] = exchange
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
            self._remove_exchange(exchange)

    def _remove_exchange(self, exchange: Exchange) -> None:
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
        requested = rules.QueueDecl(durable, exclusive, auto_delete, arguments, argument_types(arguments))
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
            return existing
        stored = requested.as_stored()
        queue = ClassicQueue(
            name,
            self.name,
            durable=stored.durable,
            exclusive_owner=owner if exclusive else None,
            auto_delete=auto_delete,
            arguments=dict(arguments),
        )
        queue.argument_types = dict(requested.argument_types)
        queue.on_unused = self._auto_delete
        self.queues[name] = queue
        if exclusive:
            owner.exclusive_queues.add(name)
        return queue

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
            self._remove_exchange(exchange)
        return queue.delete()

    def _auto_delete(self, queue: ClassicQueue) -> None:
        if self.queues.get(queue.name) is queue:
            self.delete_queue(queue.name)

    # --- bindings -----------------------------------------------------------------------------

    def _destination_exists(self, kind: str, name: str) -> bool:
        return name in (self.queues if kind == "queue" else self.exchanges)

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
            destination_exists=self._destination_exists(kind, destination),
            vhost=self.name,
            method=method,
        )
        exchange = self.exchanges[source]
        binding = Binding.of(source, destination, kind, routing_key, arguments)  # type: ignore[arg-type]
        exchange.validate_binding(binding, method)
        exchange.add_binding(binding)

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
        if exchange.remove_binding(binding) and exchange.auto_delete and not exchange.has_bindings():
            self._remove_exchange(exchange)

    # --- routing ------------------------------------------------------------------------------

    def route(
        self, exchange_name: str, routing_key: str, message: Message, method: tuple[int, int]
    ) -> list[ClassicQueue]:
        exchange = self.exchanges.get(exchange_name)
        rules.check_publish_exchange(
            exchange_name,
            exists=exchange is not None,
            internal=exchange is not None and exchange.internal,
            vhost=self.name,
            method=method,
        )
        queues = self.queues
        if not exchange_name:
            queue = queues.get(routing_key)
            return [queue] if queue is not None else []
        headers = message.properties.headers if message.has_flags else None
        return [queues[name] for name in route(self.exchanges, exchange_name, routing_key, headers, queues)]


def _decl_of(queue: ClassicQueue) -> rules.QueueDecl:
    return rules.QueueDecl(
        queue.durable,
        queue.exclusive_owner is not None,
        queue.auto_delete,
        queue.arguments,
        queue.argument_types,
    )
