"""An exchange: its declared properties, its type's bindings, and a vhost's predeclared set."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from leveret.declare_rules import ExchangeDecl

from .base import (
    EXCHANGE_DECLARE,
    Binding,
    ExchangeType,
    Targets,
    exchange_type,
)

DEFAULT_EXCHANGE = ""

# The exchanges every vhost starts with: name, type. All are durable, not auto-delete, not internal.
PREDECLARED_EXCHANGES: tuple[tuple[str, str], ...] = (
    (DEFAULT_EXCHANGE, "direct"),
    ("amq.direct", "direct"),
    ("amq.fanout", "fanout"),
    ("amq.topic", "topic"),
    ("amq.headers", "headers"),
    ("amq.match", "headers"),
)


class Exchange:
    """One exchange of a vhost. Routing across exchanges is `leveret.routing.route`'s job."""

    __slots__ = (
        "_by_destination",
        "argument_types",
        "arguments",
        "auto_delete",
        "durable",
        "internal",
        "matcher",
        "name",
        "policy_alternate_exchange",
        "type",
    )

    def __init__(
        self,
        name: str,
        type: str,
        durable: bool = False,
        auto_delete: bool = False,
        internal: bool = False,
        arguments: Mapping[str, Any] | None = None,
        argument_types: Mapping[str, str] | None = None,
        method: tuple[int, int] = EXCHANGE_DECLARE,
    ) -> None:
        self.matcher: ExchangeType = exchange_type(type, method)()
        self.name = name
        self.type = type
        self.durable = durable
        self.auto_delete = auto_delete
        self.internal = internal
        self.arguments: Mapping[str, Any] = dict(arguments or {})
        self.argument_types: Mapping[str, str] = dict(argument_types or {})
        # Set by policies; the exchange's own argument wins over it.
        self.policy_alternate_exchange: str | None = None
        # Bindings whose source is this exchange, by destination, to drop them when it goes.
        self._by_destination: dict[tuple[str, str], set[Binding]] = {}

    @classmethod
    def from_decl(cls, name: str, decl: ExchangeDecl) -> Exchange:
        return cls(
            name,
            decl.type,
            decl.durable,
            decl.auto_delete,
            decl.internal,
            decl.arguments,
            decl.argument_types,
        )

    @property
    def decl(self) -> ExchangeDecl:
        """The declared properties, for equivalence checks."""
        return ExchangeDecl(
            self.type,
            self.durable,
            self.auto_delete,
            self.internal,
            self.arguments,
            self.argument_types,
        )

    @property
    def is_default(self) -> bool:
        return self.name == DEFAULT_EXCHANGE

    @property
    def alternate_exchange(self) -> str | None:
        """Where messages this exchange cannot route go: the argument, else the policy's."""
        value = self.arguments.get("alternate-exchange")
        if isinstance(value, str):
            return value
        return self.policy_alternate_exchange

    def validate_binding(self, binding: Binding, method: tuple[int, int]) -> None:
        """Raise the 406 this exchange's type gives for a binding it refuses."""
        self.matcher.validate_binding(binding, method)

    def add_binding(self, binding: Binding) -> bool:
        """Add a binding with this exchange as source; False if it already existed."""
        if not self.matcher.add_binding(binding):
            return False
        key = (binding.destination_kind, binding.destination)
        self._by_destination.setdefault(key, set()).add(binding)
        return True

    def remove_binding(self, binding: Binding) -> bool:
        """Remove a binding; False if it did not exist."""
        if not self.matcher.remove_binding(binding):
            return False
        key = (binding.destination_kind, binding.destination)
        group = self._by_destination[key]
        group.discard(binding)
        if not group:
            del self._by_destination[key]
        return True

    def remove_bindings_to(self, destination_kind: str, destination: str) -> list[Binding]:
        """Remove every binding to a queue or exchange (it is being deleted); returns them."""
        group = self._by_destination.pop((destination_kind, destination), None)
        if not group:
            return []
        for binding in group:
            self.matcher.remove_binding(binding)
        return list(group)

    def has_binding(self, binding: Binding) -> bool:
        return binding in self._by_destination.get(
            (binding.destination_kind, binding.destination), ()
        )

    def has_bindings(self) -> bool:
        """Whether this exchange is the source of any binding (if-unused, auto-delete)."""
        return bool(self._by_destination)

    def bindings(self) -> Iterator[Binding]:
        return self.matcher.bindings()

    def match(self, routing_key: str, headers: Mapping[str, Any] | None) -> Targets:
        return self.matcher.match(routing_key, headers)

    def __repr__(self) -> str:
        return f"Exchange({self.name!r}, {self.type!r}, bindings={len(self.matcher)})"


def predeclared_exchanges() -> dict[str, Exchange]:
    """A fresh set of the exchanges a new vhost has, by name."""
    return {name: Exchange(name, type, durable=True) for name, type in PREDECLARED_EXCHANGES}


def is_predeclared(name: str) -> bool:
    return any(name == predeclared for predeclared, _ in PREDECLARED_EXCHANGES)


def unbind_everywhere(
    exchanges: Iterable[Exchange], destination_kind: str, destination: str
) -> tuple[list[Binding], list[Exchange]]:
    """Remove every binding to a queue or exchange that is being deleted.

    Returns the removed bindings and the auto-delete exchanges they left unused, which the
    caller deletes in turn (and unbinds everywhere, as exchanges can be destinations too).
    """
    removed: list[Binding] = []
    unused: list[Exchange] = []
    for exchange in exchanges:
        dropped = exchange.remove_bindings_to(destination_kind, destination)
        if dropped:
            removed.extend(dropped)
            if exchange.auto_delete and not exchange.has_bindings():
                unused.append(exchange)
    return removed, unused
