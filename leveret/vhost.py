"""A virtual host: its exchanges, queues and bindings, and the declare / bind / route operations."""

from __future__ import annotations

from typing import Any

from .amqp.errors import AMQPError, ReplyCode, access_refused, not_found, resource_locked
from .message import Message
from .names import queue_name as new_queue_name
from .queues.classic import ClassicQueue

from . import declare_rules as rules
from .exchanges.base import Binding
from .exchanges.exchange import Exchange, predeclared_exchanges
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
        existing = self.exchanges.get(name)
        if passive:
            if existing is None:
                raise not_found(f"no exchange '{name}' in vhost '{self.name}'", method)
            return existing
        if existing is None:
            rules.check_exchange_create(name, type_name, self.name, arguments, method)
            exchange = Exchange(
                name, type_name, durable=durable, auto_delete=auto_delete, internal=internal, arguments=arguments
            )
            self.exchanges[name] = exchange
            return exchange
        rules.check_exchange_equivalence(
            existing, type_name, durable, auto_delete, internal, arguments, self.name, method
        )
        return existing

    def delete_exchange(self, name: str, *, if_unused: bool, method: tuple[int, int]) -> None:
        rules.check_exchange_delete(name, self.name, method)
        exchange = self.exchanges.get(name)
        if exchange is None:
            return  # deleting a missing exchange succeeds, as in RabbitMQ
        if if_unused and exchange.has_bindings:
            raise AMQPError(
                ReplyCode.PRECONDITION_FAILED, f"exchange '{name}' in vhost '{self.name}' in use", method
            )
        self._remove_exchange(exchange)

    def _remove_exchange(self, exchange: Exchange) -> None:
        del self.exchanges[exchange.name]
        for binding in list(exchange.bindings):
            exchange.remove_binding(binding)
        # Bindings with this exchange as destination go too.
        for other in list(self.exchanges.values()):
            for binding in [b for b in other.bindings if b.destination_kind == "exchange" and b.destination == exchange.name]:
                self._remove_binding(other, binding)

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
        if passive:
            queue = self.get_queue(name, method)
            owner.check_exclusive_access(queue, method)
            return queue
        requested = rules.QueueDecl(durable, exclusive, auto_delete, arguments)
        if not name:
            name = new_queue_name()
        rules.validate_queue_arguments(name, self.name, arguments, method)
        existing = self.queues.get(name)
        if existing is not None:
            owner.check_exclusive_access(existing, method)
            if exclusive and existing.exclusive_owner is None:
                raise resource_locked(
                    f"cannot obtain exclusive access to locked queue '{name}' in vhost '{self.name}'. "
                    "It could be originally declared on another connection or the exclusive property "
                    "value does not match that of the original declaration.",
                    method,
                )
            current = rules.QueueDecl(
                existing.durable, existing.exclusive_owner is not None, existing.auto_delete, existing.arguments
            )
            rules.check_queue_equivalence(name, self.name, current, requested, method)
            return existing
        rules.check_queue_create(name, self.name, method)
        queue = ClassicQueue(
            name,
            self.name,
            durable=durable,
            exclusive_owner=owner if exclusive else None,
            auto_delete=auto_delete,
            arguments=arguments,
        )
        queue.on_unused = self._auto_delete
        self.queues[name] = queue
        if exclusive:
            owner.exclusive_queues.add(name)
        return queue

    def get_queue(self, name: str, method: tuple[int, int]) -> ClassicQueue:
        queue = self.queues.get(name)
        if queue is None:
            raise not_found(f"no queue '{name}' in vhost '{self.name}'", method)
        return queue

    def delete_queue(self, name: str) -> int:
        queue = self.queues.pop(name, None)
        if queue is None:
            return 0
        owner = queue.exclusive_owner
        if owner is not None:
            owner.exclusive_queues.discard(name)
        for exchange in list(self.exchanges.values()):
            for binding in [b for b in exchange.bindings if b.destination_kind == "queue" and b.destination == name]:
                self._remove_binding(exchange, binding)
        return queue.delete()

    def _auto_delete(self, queue: ClassicQueue) -> None:
        if self.queues.get(queue.name) is queue:
            self.delete_queue(queue.name)

    # --- bindings -----------------------------------------------------------------------------

    def _binding_ends(
        self, source: str, destination: str, kind: str, method: tuple[int, int]
    ) -> Exchange:
        if source == "" or (kind == "exchange" and destination == ""):
            raise access_refused("operation not permitted on the default exchange", method)
        exchange = self.exchanges.get(source)
        if kind == "queue":
            if destination not in self.queues:
                raise not_found(f"no queue '{destination}' in vhost '{self.name}'", method)
        elif destination not in self.exchanges:
            raise not_found(f"no exchange '{destination}' in vhost '{self.name}'", method)
        if exchange is None:
            raise not_found(f"no exchange '{source}' in vhost '{self.name}'", method)
        return exchange

    def bind(
        self, source: str, destination: str, kind: str, routing_key: str, arguments: dict[str, Any], method: tuple[int, int]
    ) -> None:
        exchange = self._binding_ends(source, destination, kind, method)
        binding = Binding.make(source, destination, kind, routing_key, arguments)
        rules.check_binding(exchange, binding, self.name, method)
        exchange.add_binding(binding)

    def unbind(
        self, source: str, destination: str, kind: str, routing_key: str, arguments: dict[str, Any], method: tuple[int, int]
    ) -> None:
        exchange = self._binding_ends(source, destination, kind, method)
        binding = Binding.make(source, destination, kind, routing_key, arguments)
        self._remove_binding(exchange, binding)

    def _remove_binding(self, exchange: Exchange, binding: Binding) -> None:
        if exchange.remove_binding(binding) and exchange.auto_delete and not exchange.has_bindings:
            self.exchanges.pop(exchange.name, None)

    # --- routing ------------------------------------------------------------------------------

    def route(self, exchange_name: str, routing_key: str, message: Message, method: tuple[int, int]) -> list[ClassicQueue]:
        exchange = self.exchanges.get(exchange_name)
        if exchange is None:
            raise not_found(f"no exchange '{exchange_name}' in vhost '{self.name}'", method)
        if exchange.internal:
            raise access_refused(f"cannot publish to internal exchange '{exchange_name}' in vhost '{self.name}'", method)
        queues = self.queues
        if exchange_name == "":
            queue = queues.get(routing_key)
            return [queue] if queue is not None else []
        headers = message.properties.headers if message.has_flags else None
        return [queues[name] for name in route(self.exchanges, exchange_name, routing_key, headers, queues.__contains__)]
