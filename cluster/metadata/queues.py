"""Commands on queues: the replicated log decides which declaration of a name wins."""

from __future__ import annotations

from cluster.metadata.exchanges import remove_bindings
from cluster.metadata.replies import Handlers, Reply, reply
from cluster.metadata.tables import Tables
from proto.metadata_schema import (
    CommandError,
    DeclareQueue,
    DeleteQueue,
    Effect,
    QueueCreated,
    QueueDeleted,
    QueueRecord,
    canonical,
    record_json,
)

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


def declare_queue(tables: Tables, command: DeclareQueue) -> tuple[Reply, list[Effect]]:
    """Create a queue on its home node, or report why an existing one is (in)equivalent.

    Replies "created", "exists" (with the existing record, whose home node wins) or
    "conflict" with `field`: "exclusive_owner" (held by another owner), "exclusive",
    "durable", "auto_delete" or "arguments" (with `argument`), and the current record.
    """
    record = queue_record(command)
    vhost, name = record.vhost, record.name
    if (vhost,) not in tables.vhosts:
        raise CommandError(f"no such vhost {vhost!r}")
    current = tables.queues.get((vhost, name))
    if current is None:
        tables.put("queues", record)
        return reply("created", queue=record_json(record)), [QueueCreated(vhost=vhost, name=name)]
    difference = queue_difference(current, record)
    if difference is not None:
        return reply("conflict", queue=record_json(current), **difference), []
    return reply("exists", queue=record_json(current)), []


def delete_queue(tables: Tables, command: DeleteQueue) -> tuple[Reply, list[Effect]]:
    """Delete a queue and its bindings; `owner` must match an exclusive queue's owner."""
    vhost, name = command.vhost, command.name
    current = tables.queues.get((vhost, name))
    if current is None:
        return reply("not_found"), []
    if current.exclusive_owner is not None and command.owner != current.exclusive_owner:
        return reply("locked", queue=record_json(current)), []
    del tables.queues[(vhost, name)]
    effects = remove_bindings(
        tables,
        lambda b: b.vhost == vhost and b.destination_type == "queue" and b.destination == name,
    )
    return reply("deleted", queue=record_json(current)), [
        QueueDeleted(vhost=vhost, name=name),
        *effects,
    ]


def queue_record(command: DeclareQueue) -> QueueRecord:
    """The queue a declare command describes."""
    return QueueRecord(
        vhost=command.vhost,
        name=command.name,
        durable=command.durable,
        auto_delete=command.auto_delete,
        exclusive_owner=command.exclusive_owner,
        arguments=command.arguments,
        argument_types=command.argument_types,
        home_node=command.home_node,
        home_run=command.home_run,
    )


def queue_difference(current: QueueRecord, wanted: QueueRecord) -> dict[str, str] | None:
    """Why `wanted` is not equivalent to `current`, in the order RabbitMQ checks; None if it is."""
    if current.exclusive_owner is not None and wanted.exclusive_owner != current.exclusive_owner:
        return {"field": "exclusive_owner"}
    if current.exclusive_owner is None and wanted.exclusive_owner is not None:
        return {"field": "exclusive"}
    for prop in ("durable", "auto_delete"):
        if getattr(current, prop) != getattr(wanted, prop):
            return {"field": prop}
    for argument in EQUIVALENCE_ARGUMENTS:
        if _argument(current, argument) != _argument(wanted, argument):
            return {"field": "arguments", "argument": argument}
    return None


def _argument(queue: QueueRecord, name: str) -> str:
    value = queue.arguments.get(name)
    if name == "x-queue-type" and value is None:
        value = "classic"  # leaving the type out means the default, classic
    return canonical(value)


HANDLERS: Handlers = {
    DeclareQueue: declare_queue,
    DeleteQueue: delete_queue,
}
