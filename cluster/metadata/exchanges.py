"""Commands on exchanges and bindings."""

from __future__ import annotations

from collections.abc import Callable

from cluster.metadata.commands import Command, CommandError, Effect, Reply, field, reply
from cluster.metadata.tables import Record, Tables, canonical

# The properties whose difference makes a redeclaration inequivalent, in RabbitMQ's order.
_EXCHANGE_PROPERTIES = ("type", "durable", "auto_delete", "internal", "arguments")


def declare_exchange(tables: Tables, command: Command) -> tuple[Reply, list[Effect]]:
    """Create an exchange; "exists" when equivalent, "conflict" naming the first difference."""
    vhost, name = field(command, "vhost", str), field(command, "name", str)
    _require_vhost(tables, vhost)
    record = {
        "vhost": vhost,
        "name": name,
        "type": field(command, "type", str),
        "durable": field(command, "durable", bool, True),
        "auto_delete": field(command, "auto_delete", bool, False),
        "internal": field(command, "internal", bool, False),
        "arguments": field(command, "arguments", dict, {}),
        "argument_types": field(command, "argument_types", dict, {}),
    }
    current = tables.exchanges.get((vhost, name))
    if current is not None:
        for prop in _EXCHANGE_PROPERTIES:
            if canonical(current[prop]) != canonical(record[prop]):
                return reply("conflict", field=prop, exchange=current), []
        return reply("exists", exchange=current), []
    tables.put("exchanges", record)
    return reply("created", exchange=record), [
        {"type": "exchange_created", "vhost": vhost, "name": name}
    ]


def delete_exchange(tables: Tables, command: Command) -> tuple[Reply, list[Effect]]:
    """Delete an exchange and every binding to or from it (`if_unused`: only if unbound)."""
    vhost, name = field(command, "vhost", str), field(command, "name", str)
    if (vhost, name) not in tables.exchanges:
        return reply("not_found"), []
    if field(command, "if_unused", bool, False) and any(
        b["vhost"] == vhost and b["source"] == name for b in tables.bindings.values()
    ):
        return reply("in_use"), []
    del tables.exchanges[(vhost, name)]
    effects = remove_bindings(
        tables,
        lambda b: (
            b["vhost"] == vhost
            and (
                b["source"] == name
                or (b["destination_type"] == "exchange" and b["destination"] == name)
            )
        ),
    )
    return reply("deleted"), [{"type": "exchange_deleted", "vhost": vhost, "name": name}, *effects]


def bind(tables: Tables, command: Command) -> tuple[Reply, list[Effect]]:
    """Bind a queue or exchange to a source exchange; "exists" if already bound."""
    record = _binding(command)
    vhost = record["vhost"]
    if (vhost, record["source"]) not in tables.exchanges:
        return reply("not_found", missing="source"), []
    destinations = tables.queues if record["destination_type"] == "queue" else tables.exchanges
    if (vhost, record["destination"]) not in destinations:
        return reply("not_found", missing="destination"), []
    key = _binding_key(record)
    if key in tables.bindings:
        return reply("exists"), []
    tables.bindings[key] = record
    return reply("created"), [{"type": "binding_created", **_effect_fields(record)}]


def unbind(tables: Tables, command: Command) -> tuple[Reply, list[Effect]]:
    """Remove one binding (auto-delete exchanges left without bindings go too)."""
    record = _binding(command)
    key = _binding_key(record)
    if key not in tables.bindings:
        return reply("not_found"), []
    effects = remove_bindings(tables, lambda b: _binding_key(b) == key)
    return reply("deleted"), effects


def remove_bindings(tables: Tables, doomed: Callable[[Record], bool]) -> list[Effect]:
    """Remove the matching bindings, then auto-delete exchanges they left unbound as sources."""
    effects: list[Effect] = []
    sources: set[tuple[str, str]] = set()
    for key in sorted(key for key, binding in tables.bindings.items() if doomed(binding)):
        binding = tables.bindings.pop(key)
        sources.add((binding["vhost"], binding["source"]))
        effects.append({"type": "binding_deleted", **_effect_fields(binding)})
    for vhost, source in sorted(sources):
        exchange = tables.exchanges.get((vhost, source))
        still_bound = any(
            b["vhost"] == vhost and b["source"] == source for b in tables.bindings.values()
        )
        if exchange is not None and exchange["auto_delete"] and not still_bound:
            del tables.exchanges[(vhost, source)]
            effects.append({"type": "exchange_deleted", "vhost": vhost, "name": source})
            effects.extend(remove_bindings(tables, _to_exchange(vhost, source)))
    return effects


def _to_exchange(vhost: str, name: str) -> Callable[[Record], bool]:
    def binds_to(binding: Record) -> bool:
        return bool(
            binding["vhost"] == vhost
            and binding["destination_type"] == "exchange"
            and binding["destination"] == name
        )

    return binds_to


def _binding(command: Command) -> Record:
    destination_type = field(command, "destination_type", str, "queue")
    if destination_type not in ("queue", "exchange"):
        raise CommandError("destination_type must be 'queue' or 'exchange'")
    arguments = field(command, "arguments", dict, {})
    return {
        "vhost": field(command, "vhost", str),
        "source": field(command, "source", str),
        "destination_type": destination_type,
        "destination": field(command, "destination", str),
        "routing_key": field(command, "routing_key", str, ""),
        "arguments": arguments,
        "args_key": canonical(arguments),
    }


def _binding_key(record: Record) -> tuple[str, ...]:
    return (
        record["vhost"],
        record["source"],
        record["destination_type"],
        record["destination"],
        record["routing_key"],
        record["args_key"],
    )


def _effect_fields(record: Record) -> Record:
    return {key: value for key, value in record.items() if key != "args_key"}


def _require_vhost(tables: Tables, vhost: str) -> None:
    if (vhost,) not in tables.vhosts:
        raise CommandError(f"no such vhost {vhost!r}")


HANDLERS = {
    "declare_exchange": declare_exchange,
    "delete_exchange": delete_exchange,
    "bind": bind,
    "unbind": unbind,
}
