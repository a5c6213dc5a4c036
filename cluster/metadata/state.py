"""The replicated metadata store as a pure machine: `apply(command) -> (reply, effects)`."""

from __future__ import annotations

import copy
from typing import TypeVar

from cluster.metadata import access, exchanges, members, policies, queues
from cluster.metadata.replies import Handlers, Reply, reply
from cluster.metadata.tables import Key, Tables
from proto.metadata_schema import (
    Batch,
    BindingRecord,
    Command,
    CommandError,
    Effect,
    ExchangeRecord,
    GlobalParameterRecord,
    MemberRecord,
    ParameterRecord,
    PermissionRecord,
    PolicyRecord,
    QueueRecord,
    Record,
    Unreadable,
    UserRecord,
    VhostRecord,
)

R = TypeVar("R", bound=Record)
V = TypeVar(
    "V", ExchangeRecord, BindingRecord, QueueRecord, PolicyRecord
)  # the records that live in a vhost


def batch(tables: Tables, command: Batch) -> tuple[Reply, list[Effect]]:
    """Apply several commands as one entry (a node's definitions when it starts sharing them);
    each gets its own status, and one that cannot be applied changes nothing of its own."""
    statuses: list[str] = []
    effects: list[Effect] = []
    for item in command.commands:
        try:
            result, item_effects = HANDLERS[type(item)](tables, item)
        except CommandError:
            statuses.append("error")
            continue
        statuses.append(result["status"])
        effects.extend(item_effects)
    return reply("ok", statuses=statuses), effects


def unreadable(_tables: Tables, command: Unreadable) -> tuple[Reply, list[Effect]]:
    """A batch item that did not decode: an error, as it always was."""
    raise CommandError(command.reason)


HANDLERS: Handlers = {
    **access.HANDLERS,
    **exchanges.HANDLERS,
    **queues.HANDLERS,
    **policies.HANDLERS,
    **members.HANDLERS,
    Batch: batch,
    Unreadable: unreadable,
}


class MetadataState:
    """Vhosts, users, permissions, exchanges, bindings, queues, policies, parameters, members.

    Every node applies the same committed commands in the same order and so holds the same
    state. `apply` never raises: a command that cannot be applied gets an "error" reply and
    changes nothing. Effects tell the local node what to do outside the store (start a queue
    it is home to, ...).
    """

    def __init__(self, tables: Tables | None = None) -> None:
        self._tables = tables or Tables()

    def apply(self, command: Command) -> tuple[Reply, list[Effect]]:
        """Apply one committed command (decoded from the log, so its fields are checked)."""
        # Handlers validate before they change anything, so an error leaves the state as it was.
        try:
            result, effects = HANDLERS[type(command)](self._tables, command)
        except CommandError as error:
            return reply("error", reason=str(error)), []
        # Replies share records' arguments with the tables; callers get copies they may change.
        return copy.deepcopy(result), effects

    def snapshot(self) -> bytes:
        """The whole state as canonical JSON."""
        return self._tables.to_json()

    @classmethod
    def restore(cls, data: bytes) -> MetadataState:
        """The state a `snapshot` captured."""
        return cls(Tables.from_json(data))

    # -- reads ---------------------------------------------------------------------------

    # Reads return the stored records themselves, for speed: treat them as read-only.

    def vhost(self, name: str) -> VhostRecord | None:
        return self._tables.vhosts.get((name,))

    def vhosts(self) -> list[VhostRecord]:
        return _in_order(self._tables.vhosts)

    def user(self, name: str) -> UserRecord | None:
        return self._tables.users.get((name,))

    def users(self) -> list[UserRecord]:
        return _in_order(self._tables.users)

    def permissions(
        self, user: str | None = None, vhost: str | None = None
    ) -> list[PermissionRecord]:
        return [
            record
            for record in _in_order(self._tables.permissions)
            if (user is None or record.user == user) and (vhost is None or record.vhost == vhost)
        ]

    def exchange(self, vhost: str, name: str) -> ExchangeRecord | None:
        return self._tables.exchanges.get((vhost, name))

    def exchanges(self, vhost: str | None = None) -> list[ExchangeRecord]:
        return _in_vhost(self._tables.exchanges, vhost)

    def bindings(self, vhost: str | None = None) -> list[BindingRecord]:
        return _in_vhost(self._tables.bindings, vhost)

    def queue(self, vhost: str, name: str) -> QueueRecord | None:
        return self._tables.queues.get((vhost, name))

    def queues(self, vhost: str | None = None) -> list[QueueRecord]:
        return _in_vhost(self._tables.queues, vhost)

    def policies(self, vhost: str | None = None) -> list[PolicyRecord]:
        return _in_vhost(self._tables.policies, vhost)

    def operator_policies(self, vhost: str | None = None) -> list[PolicyRecord]:
        return _in_vhost(self._tables.operator_policies, vhost)

    def parameters(
        self, component: str | None = None, vhost: str | None = None
    ) -> list[ParameterRecord]:
        return [
            record
            for record in _in_order(self._tables.parameters)
            if (component is None or record.component == component)
            and (vhost is None or record.vhost == vhost)
        ]

    def global_parameter(self, name: str) -> GlobalParameterRecord | None:
        return self._tables.global_parameters.get((name,))

    def global_parameters(self) -> list[GlobalParameterRecord]:
        return _in_order(self._tables.global_parameters)

    def members(self) -> list[MemberRecord]:
        return _in_order(self._tables.members)


def _in_order(table: dict[Key, R]) -> list[R]:
    return [table[key] for key in sorted(table)]


def _in_vhost(table: dict[Key, V], vhost: str | None) -> list[V]:
    return [record for record in _in_order(table) if vhost is None or record.vhost == vhost]
