"""The protocol every exchange type implements, the binding record, and the type registry."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, NamedTuple, Protocol, TypeVar

from leveret.amqp.errors import AMQPError, ReplyCode

DestinationKind = Literal["queue", "exchange"]

# A binding's arguments in hashable form: (key, frozen value) pairs sorted by key.
FrozenArguments = tuple[tuple[str, Any], ...]

EXCHANGE_DECLARE = (40, 10)


class FrozenTable(tuple):  # type: ignore[type-arg]
    """A nested field table in hashable form: its (key, frozen value) pairs, in order."""

    __slots__ = ()


def freeze_value(value: Any) -> Any:
    """A hashable equivalent of a decoded field value (tables and arrays become tuples)."""
    if isinstance(value, dict):
        return FrozenTable((key, freeze_value(item)) for key, item in value.items())
    if isinstance(value, list):
        return tuple(freeze_value(item) for item in value)
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    return value


def thaw_value(value: Any) -> Any:
    """The decoded form of a frozen value again: FrozenTable to dict, tuple to list."""
    if isinstance(value, FrozenTable):
        return {key: thaw_value(item) for key, item in value}
    if isinstance(value, tuple):
        return [thaw_value(item) for item in value]
    return value


def freeze_arguments(arguments: Mapping[str, Any] | None) -> FrozenArguments:
    """Binding arguments as a hashable, order-independent tuple."""
    if not arguments:
        return ()
    return tuple(sorted((key, freeze_value(value)) for key, value in arguments.items()))


class Destination(NamedTuple):
    """Where a binding delivers: a queue or an exchange, by name."""

    kind: DestinationKind
    name: str


@dataclass(frozen=True, slots=True)
class Binding:
    """One binding from an exchange to a queue or exchange; equal bindings are the same binding."""

    source: str
    destination: str
    destination_kind: DestinationKind
    routing_key: str
    arguments: FrozenArguments = ()
    target: Destination = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "target", Destination(self.destination_kind, self.destination))

    @classmethod
    def of(
        cls,
        source: str,
        destination: str,
        destination_kind: DestinationKind,
        routing_key: str,
        arguments: Mapping[str, Any] | None = None,
    ) -> Binding:
        """Build a binding from arguments as decoded from a field table."""
        return cls(source, destination, destination_kind, routing_key, freeze_arguments(arguments))

    def argument_table(self) -> dict[str, Any]:
        """The arguments as decoded from the field table again."""
        return {key: thaw_value(value) for key, value in self.arguments}


class Targets(NamedTuple):
    """What one exchange routed a message to: queue names and exchange names."""

    queues: frozenset[str]
    exchanges: frozenset[str]


NO_TARGETS = Targets(frozenset(), frozenset())


def targets_of(destinations: Iterable[Destination]) -> Targets:
    queues: set[str] = set()
    exchanges: set[str] = set()
    for kind, name in destinations:
        (queues if kind == "queue" else exchanges).add(name)
    if not queues and not exchanges:
        return NO_TARGETS
    return Targets(frozenset(queues), frozenset(exchanges))


def union_targets(parts: list[Targets]) -> Targets:
    """The union of several routing results, reusing a part when only one is non-empty."""
    non_empty = [part for part in parts if part.queues or part.exchanges]
    if not non_empty:
        return NO_TARGETS
    if len(non_empty) == 1:
        return non_empty[0]
    queues: frozenset[str] = frozenset().union(*(part.queues for part in non_empty))
    exchanges: frozenset[str] = frozenset().union(*(part.exchanges for part in non_empty))
    return Targets(queues, exchanges)


class BindingSet:
    """A set of bindings with its routing result computed once per change, not per message."""

    __slots__ = ("_bindings", "_targets")

    def __init__(self) -> None:
        self._bindings: dict[Binding, None] = {}
        self._targets: Targets | None = NO_TARGETS

    def add(self, binding: Binding) -> bool:
        if binding in self._bindings:
            return False
        self._bindings[binding] = None
        self._targets = None
        return True

    def remove(self, binding: Binding) -> bool:
        if binding not in self._bindings:
            return False
        del self._bindings[binding]
        self._targets = None
        return True

    @property
    def targets(self) -> Targets:
        targets = self._targets
        if targets is None:
            targets = self._targets = targets_of(b.target for b in self._bindings)
        return targets

    def __len__(self) -> int:
        return len(self._bindings)

    def __iter__(self) -> Iterator[Binding]:
        return iter(self._bindings)

    def __bool__(self) -> bool:
        return bool(self._bindings)


class ExchangeType(Protocol):
    """The routing behaviour of one exchange type: holds its bindings and matches messages."""

    type_name: ClassVar[str]

    def validate_binding(self, binding: Binding, method: tuple[int, int]) -> None:
        """Raise the AMQPError RabbitMQ gives for a binding this type refuses."""

    def add_binding(self, binding: Binding) -> bool:
        """Add a binding; False if it was already there."""

    def remove_binding(self, binding: Binding) -> bool:
        """Remove a binding; False if it was not there."""

    def match(self, routing_key: str, headers: Mapping[str, Any] | None) -> Targets:
        """Where a message with this routing key and these headers goes (one hop only)."""

    def bindings(self) -> Iterator[Binding]:
        """Every binding, in no particular order."""

    def __len__(self) -> int:
        """How many bindings there are."""


EXCHANGE_TYPES: dict[str, type[ExchangeType]] = {}

_T = TypeVar("_T", bound=type)


def register_exchange_type(name: str) -> Callable[[_T], _T]:
    """Class decorator: make an exchange type declarable under `name`."""

    def register(cls: _T) -> _T:
        cls.type_name = name  # type: ignore[attr-defined]
        EXCHANGE_TYPES[name] = cls
        return cls

    return register


def exchange_type(name: str, method: tuple[int, int] = EXCHANGE_DECLARE) -> type[ExchangeType]:
    """The class of the named exchange type, or the connection error RabbitMQ gives."""
    try:
        return EXCHANGE_TYPES[name]
    except KeyError:
        raise AMQPError(
            ReplyCode.COMMAND_INVALID, f"unknown exchange type '{name}'", method, hard=True
        ) from None
