"""Exchange types (one module each, registered by name), bindings and the exchange model."""

from . import direct, fanout, headers, topic  # noqa: F401  (importing registers the types)
from .base import (
    EXCHANGE_TYPES,
    NO_TARGETS,
    Binding,
    Destination,
    ExchangeType,
    Targets,
    exchange_type,
    freeze_arguments,
    register_exchange_type,
)
from .exchange import (
    DEFAULT_EXCHANGE,
    PREDECLARED_EXCHANGES,
    Exchange,
    predeclared_exchanges,
    unbind_everywhere,
)

__all__ = [
    "DEFAULT_EXCHANGE",
    "EXCHANGE_TYPES",
    "NO_TARGETS",
    "PREDECLARED_EXCHANGES",
    "Binding",
    "Destination",
    "Exchange",
    "ExchangeType",
    "Targets",
    "exchange_type",
    "freeze_arguments",
    "predeclared_exchanges",
    "register_exchange_type",
    "unbind_everywhere",
]
