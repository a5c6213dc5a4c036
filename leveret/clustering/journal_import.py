"""A node's first definitions, as one batch for the replicated store: defaults, or an old journal.

Every node keeps its definitions in the cluster's replicated store, a lone node in its own
one-voter one. A data directory written before that kept them in a journal (definitions.log);
the first start on it imports the journal, so upgrading keeps every durable definition.
"""

from __future__ import annotations

import base64
import os

from proto.metadata_schema import (
    AddVhost,
    Batch,
    Bind,
    Command,
    DeclareExchange,
    DeclareQueue,
    PutUser,
    SetGlobalParameter,
    SetOperatorPolicy,
    SetParameter,
    SetPermissions,
    SetPolicy,
)

from ..auth import hash_password
from ..config import Config
from ..definitions_log import Record


def default_commands(config: Config) -> Batch:
    """A new node's definitions: the default vhost and user (RabbitMQ's guest), and the
    identity the cluster keeps for as long as it lives."""
    cluster_id = base64.urlsafe_b64encode(os.urandom(16)).rstrip(b"=").decode("ascii")
    return Batch(
        commands=(
            AddVhost(name=config.default_vhost),
            PutUser(
                name=config.default_user,
                password_hash=hash_password(config.default_pass),
                tags=("administrator",),
            ),
            _permissions(config.default_user, config.default_vhost, ".*", ".*", ".*"),
            SetGlobalParameter(
                name="internal_cluster_id", value=f"leveret-cluster-id-{cluster_id}"
            ),
        )
    )


def journal_commands(records: list[Record], node_name: str) -> Batch:
    """The definitions an old journal holds (see DefinitionsLog.load), in replayable order;
    its queues are homed on this node, whose disk holds their messages."""
    commands: list[Command] = []
    for record in records:
        commands.extend(_commands_of(record, node_name))
    return Batch(commands=tuple(commands))


def _commands_of(record: Record, node_name: str) -> list[Command]:
    kind = record["kind"]
    if kind == "vhost":
        return [AddVhost(name=record["name"])]
    if kind == "user":
        return [
            PutUser(
                name=record["name"],
                password_hash=record["password_hash"],
                tags=tuple(record["tags"]),
            )
        ]
    if kind == "permission":
        return [
            _permissions(
                record["user"],
                record["vhost"],
                record["configure"],
                record["write"],
                record["read"],
            )
        ]
    if kind == "exchange":
        return [
            DeclareExchange(
                vhost=record["vhost"],
                name=record["name"],
                type=record["type"],
                durable=True,
                auto_delete=record["auto_delete"],
                internal=record["internal"],
                arguments=record["arguments"],
                argument_types=dict(record["argument_types"]),
            )
        ]
    if kind == "queue":
        return [
            DeclareQueue(
                vhost=record["vhost"],
                name=record["name"],
                durable=True,
                auto_delete=record["auto_delete"],
                exclusive_owner=None,
                arguments=record["arguments"],
                argument_types=dict(record["argument_types"]),
                home_node=node_name,
                home_run="",
            )
        ]
    if kind == "binding":
        return [
            Bind(
                vhost=record["vhost"],
                source=record["source"],
                # The journal's name for the field; the store's is RabbitMQ's.
                destination_type=record["destination_kind"],
                destination=record["destination"],
                routing_key=record["routing_key"],
                arguments=record["arguments"],
            )
        ]
    if kind == "registry":
        return [_policy_command(entry) for entry in record["policies"]] + [
            SetParameter(
                component=entry["component"],
                vhost=entry["vhost"],
                name=entry["name"],
                value=entry["value"],
            )
            for entry in record["parameters"]
        ]
    raise ValueError(f"unknown definition kind {kind!r}")


def _policy_command(entry: Record) -> Command:
    command = SetPolicy if entry["policy_kind"] == "policy" else SetOperatorPolicy
    return command(
        vhost=entry["vhost"],
        name=entry["name"],
        pattern=entry["pattern"],
        # The journal kept the management API's spelling.
        apply_to=entry["apply-to"],
        definition=entry["definition"],
        priority=entry["priority"],
    )


def _permissions(user: str, vhost: str, configure: str, write: str, read: str) -> SetPermissions:
    return SetPermissions(user=user, vhost=vhost, configure=configure, write=write, read=read)
