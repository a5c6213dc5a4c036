"""Commands on queues: the replicated log decides which declaration of a name wins."""

from __future__ import annotations

from cluster.metadata.commands import Command, CommandError, Effect, Reply, field, reply
from cluster.metadata.exchanges import remove_bindings
from cluster.metadata.tables import Record, Tables, canonical

# The x-arguments whose values must match on redeclaration, in RabbitMQ's order (the same list
# as leveret.declare_rules.CLASSIC_QUEUE_ARGUMENTS); other arguments may differ.
EQUIVALENCE_ARGUMENTS = (
    "x-expires",
    "x-message-ttl",
    "x-dead-letter-exchange",
    "x-dead-letter-routing-key",
    "x-max-length",
    "x-max-length-bytes",
    "x-max-priority",
    "x-overflow",
    "x-queue-mode",
    "x-queue-version",
    "x-single-active-consumer",
    "x-queue-type",
    "x-queue-master-locator",
    "x-queue-leader-locator",
)


def declare_queue(tables: Tables, command: Command) -> tuple[Reply, list[Effect]]:
    """Create a queue on its home node, or report why an existing one is (in)equivalent.

    Replies "created", "exists" (with the existing record, whose home node wins) or
    "conflict" with `field`: "exclusive_owner" (held by another owner), "exclusive",
    "durable", "auto_delete" or "arguments" (with `argument`), and the current record.
    """
    record = queue_record(command)
    vhost, name = record["vhost"], record["name"]
    if (vhost,) not in tables.vhosts:
        raise CommandError(f"no such vhost {vhost!r}")
    current = tables.queues.get((vhost, name))
    if current is None:
        tables.put("queues", record)
        return reply("created", queue=record), [{"type": "queue_created", **record}]
    difference = queue_difference(current, record)
    if difference is not None:
        return reply("conflict", queue=current, **difference), []
    return reply("exists", queue=current), []


def delete_queue(tables: Tables, command: Command) -> tuple[Reply, list[Effect]]:
    """Delete a queue and its bindings; `owner` must match an exclusive queue's owner."""
    vhost, name = field(command, "vhost", str), field(command, "name", str)
    current = tables.queues.get((vhost, name))
    if current is None:
        return reply("not_found"), []
    owner = field(command, "owner", str, None)
    if current["exclusive_owner"] is not None and owner != current["exclusive_owner"]:
        return reply("locked", queue=current), []
    del tables.queues[(vhost, name)]
    effects = remove_bindings(
        tables,
        lambda b: (
            b["vhost"] == vhost and b["destination_type"] == "queue" and b["destination"] == name
        ),
    )
    deleted: Effect = {"type": "queue_deleted", "vhost": vhost, "name": name}
    return reply("deleted", queue=current), [deleted, *effects]


def queue_record(command: Command) -> Record:
    """The queue a declare command describes."""
    return {
        "vhost": field(command, "vhost", str),
        "name": field(command, "name", str),
        "durable": field(command, "durable", bool, False),
        "auto_delete": field(command, "auto_delete", bool, False),
        "exclusive_owner": field(command, "exclusive_owner", str, None),
        "arguments": field(command, "arguments", dict, {}),
        # The AMQP type letters of the arguments, for exact equivalence checks on every node.
        "argument_types": field(command, "argument_types", dict, {}),
        "home_node": field(command, "home_node", str),
        "home_run": field(command, "home_run", str, ""),
    }


def queue_difference(current: Record, wanted: Record) -> dict[str, str] | None:
    """Why `wanted` is not equivalent to `current`, in the order RabbitMQ checks; None if it is."""
    if (
        current["exclusive_owner"] is not None
        and wanted["exclusive_owner"] != current["exclusive_owner"]
    ):
        return {"field": "exclusive_owner"}
    if current["exclusive_owner"] is None and wanted["exclusive_owner"] is not None:
        return {"field": "exclusive"}
    for prop in ("durable", "auto_delete"):
        if current[prop] != wanted[prop]:
            return {"field": prop}
    for argument in EQUIVALENCE_ARGUMENTS:
        if _argument(current, argument) != _argument(wanted, argument):
            return {"field": "arguments", "argument": argument}
    return None


def _argument(queue: Record, name: str) -> str:
    value = queue["arguments"].get(name)
    if name == "x-queue-type" and value is None:
        value = "classic"  # leaving the type out means the default, classic
    return canonical(value)


HANDLERS = {
    "declare_queue": declare_queue,
    "delete_queue": delete_queue,
}
