"""Definitions as commands and records of the metadata store, and back again.

Field-table arguments travel as tagged JSON (`encode_arguments`) with their AMQP type letters
beside them, so that a node that did not see the declaration compares redeclarations exactly as
the declaring node would.
"""

from __future__ import annotations

from typing import Any

from proto.metadata_schema import (
    Bind,
    BindingRecord,
    DeclareExchange,
    DeclareQueue,
    DeleteExchange,
    DeleteQueue,
    ExchangeRecord,
    QueueRecord,
    Unbind,
    record_from_json,
)

from . import declare_rules as rules
from .definitions_log import decode_arguments, encode_arguments
from .exchanges.base import Binding
from .names import RUN_ID


def declare_exchange(vhost: str, name: str, decl: rules.ExchangeDecl) -> DeclareExchange:
    return DeclareExchange(
        vhost=vhost,
        name=name,
        type=decl.type,
        durable=decl.durable,
        auto_delete=decl.auto_delete,
        internal=decl.internal,
        arguments=encode_arguments(dict(decl.arguments)),
        argument_types=dict(decl.argument_types or {}),
    )


def delete_exchange(vhost: str, name: str, if_unused: bool) -> DeleteExchange:
    return DeleteExchange(vhost=vhost, name=name, if_unused=if_unused)


def exchange_decl(record: ExchangeRecord) -> rules.ExchangeDecl:
    """The declaration an exchange record holds."""
    return rules.ExchangeDecl(
        record.type,
        record.durable,
        record.auto_delete,
        record.internal,
        decode_arguments(record.arguments),
        dict(record.argument_types),
    )


def declare_queue(
    vhost: str,
    name: str,
    decl: rules.QueueDecl,
    owner: str | None,
    home_node: str,
    home_run: str = RUN_ID,
) -> DeclareQueue:
    return DeclareQueue(
        vhost=vhost,
        name=name,
        durable=decl.durable,
        auto_delete=decl.auto_delete,
        exclusive_owner=owner,
        arguments=encode_arguments(dict(decl.arguments)),
        argument_types=dict(decl.argument_types or {}),
        home_node=home_node,
        home_run=home_run,
    )


def delete_queue(vhost: str, name: str, owner: str | None) -> DeleteQueue:
    return DeleteQueue(vhost=vhost, name=name, owner=owner)


def queue_decl(record: QueueRecord) -> rules.QueueDecl:
    """The declaration a queue record holds."""
    return rules.QueueDecl(
        record.durable,
        record.exclusive_owner is not None,
        record.auto_delete,
        decode_arguments(record.arguments),
        dict(record.argument_types),
    )


def replied_exchange(reply: dict[str, Any]) -> ExchangeRecord:
    """The exchange a reply names (the one that won, when a declaration was not created)."""
    return record_from_json(ExchangeRecord, reply["exchange"])


def replied_queue(reply: dict[str, Any]) -> QueueRecord:
    """The queue a reply names (the one that won, when a declaration was not created)."""
    return record_from_json(QueueRecord, reply["queue"])


def bind(vhost: str, binding: Binding) -> Bind:
    return Bind(
        vhost=vhost,
        source=binding.source,
        destination_type=binding.destination_kind,
        destination=binding.destination,
        routing_key=binding.routing_key,
        arguments=encode_arguments(binding.argument_table()),
    )


def unbind(vhost: str, binding: Binding) -> Unbind:
    return Unbind(
        vhost=vhost,
        source=binding.source,
        destination_type=binding.destination_kind,
        destination=binding.destination,
        routing_key=binding.routing_key,
        arguments=encode_arguments(binding.argument_table()),
    )


def binding_of(record: BindingRecord) -> Binding:
    """The binding a binding record describes."""
    return Binding.of(
        record.source,
        record.destination,
        record.destination_type,
        record.routing_key,
        decode_arguments(record.arguments),
    )
