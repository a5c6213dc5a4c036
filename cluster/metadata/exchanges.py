"""Commands on exchanges and bindings."""

from __future__ import annotations

from collections.abc import Callable

from cluster.metadata.replies import Handlers, Reply, reply
from cluster.metadata.tables import Tables, key_of
from proto.metadata_schema import (
    Bind,
    BindingCreated,
    BindingDeleted,
    BindingRecord,
    CommandError,
    DeclareExchange,
    DeleteExchange,
    Effect,
    ExchangeCreated,
    ExchangeDeleted,
    ExchangeRecord,
    Unbind,
    canonical,
    record_json,
)

# The properties whose difference makes a redeclaration inequivalent, in RabbitMQ's order.
_EXCHANGE_PROPERTIES = ("type", "durable", "auto_delete", "internal", "arguments")


def declare_exchange(tables: Tables, command: DeclareExchange) -> tuple[Reply, list[Effect]]:
    """Create an exchange; "exists" when equivalent, "conflict" naming the first difference."""
    vhost, name = command.vhost, command.name
    _require_vhost(tables, vhost)
    record = ExchangeRecord(
        vhost=vhost,
        name=name,
        type=command.type,
        durable=command.durable,
        auto_delete=command.auto_delete,
        internal=command.internal,
        arguments=command.arguments,
        argument_types=command.argument_types,
    )
    current = tables.exchanges.get((vhost, name))
    if current is not None:
        for prop in _EXCHANGE_PROPERTIES:
            if canonical(getattr(current, prop)) != canonical(getattr(record, prop)):
                return reply("conflict", field=prop, exchange=record_json(current)), []
        return reply("exists", exchange=record_json(current)), []
    tables.put("exchanges", record)
    return reply("created", exchange=record_json(record)), [ExchangeCreated(vhost=vhost, name=name)]


def delete_exchange(tables: Tables, command: DeleteExchange) -> tuple[Reply, list[Effect]]:
    """Delete an exchange and every binding to or from it (`if_unused`: only if unbound)."""
    vhost, name = command.vhost, command.name
    if (vhost, name) not in tables.exchanges:
        return reply("not_found"), []
    if command.if_unused and any(
        b.vhost == vhost and b.source == name for b in tables.bindings.values()
    ):
        return reply("in_use"), []
    del tables.exchanges[(vhost, name)]
    effects = remove_bindings(
        tables,
        lambda b: (
            b.vhost == vhost
            and (b.source == name or (b.destination_type == "exchange" and b.destination == name))
        ),
    )
    return reply("deleted"), [ExchangeDeleted(vhost=vhost, name=name), *effects]


def bind(tables: Tables, command: Bind) -> tuple[Reply, list[Effect]]:
    """Bind a queue or exchange to a source exchange; "exists" if already bound."""
    record = _binding(command)
    vhost = record.vhost
    if (vhost, record.source) not in tables.exchanges:
        return reply("not_found", missing="source"), []
    destinations = tables.queues if record.destination_type == "queue" else tables.exchanges
    if (vhost, record.destination) not in destinations:
        return reply("not_found", missing="destination"), []
    key = key_of("bindings", record)
    if key in tables.bindings:
        return reply("exists"), []
    tables.bindings[key] = record
    return reply("created"), [BindingCreated(binding=record)]


def unbind(tables: Tables, command: Unbind) -> tuple[Reply, list[Effect]]:
    """Remove one binding (auto-delete exchanges left without bindings go too)."""
    key = key_of("bindings", _binding(command))
    if key not in tables.bindings:
        return reply("not_found"), []
    effects = remove_bindings(tables, lambda b: key_of("bindings", b) == key)
    return reply("deleted"), effects


def remove_bindings(tables: Tables, doomed: Callable[[BindingRecord], bool]) -> list[Effect]:
    """Remove the matching bindings, then auto-delete exchanges they left unbound as sources."""
    effects: list[Effect] = []
    sources: set[tuple[str, str]] = set()
    for key in sorted(key for key, binding in tables.bindings.items() if doomed(binding)):
        binding = tables.bindings.pop(key)
        sources.add((binding.vhost, binding.source))
        effects.append(BindingDeleted(binding=binding))
    for vhost, source in sorted(sources):
        exchange = tables.exchanges.get((vhost, source))
        still_bound = any(b.vhost == vhost and b.source == source for b in tables.bindings.values())
        if exchange is not None and exchange.auto_delete and not still_bound:
            del tables.exchanges[(vhost, source)]
            effects.append(ExchangeDeleted(vhost=vhost, name=source))
            effects.extend(remove_bindings(tables, _to_exchange(vhost, source)))
    return effects


def _to_exchange(vhost: str, name: str) -> Callable[[BindingRecord], bool]:
    def binds_to(binding: BindingRecord) -> bool:
        return (
            binding.vhost == vhost
            and binding.destination_type == "exchange"
            and binding.destination == name
        )

    return binds_to


def _binding(command: Bind | Unbind) -> BindingRecord:
    return BindingRecord(
        vhost=command.vhost,
        source=command.source,
        destination_type=command.destination_type,
        destination=command.destination,
        routing_key=command.routing_key,
        arguments=command.arguments,
    )


def _require_vhost(tables: Tables, vhost: str) -> None:
    if (vhost,) not in tables.vhosts:
        raise CommandError(f"no such vhost {vhost!r}")


HANDLERS: Handlers = {
    DeclareExchange: declare_exchange,
    DeleteExchange: delete_exchange,
    Bind: bind,
    Unbind: unbind,
}
