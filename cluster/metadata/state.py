"""The replicated metadata store as a pure machine: `apply(command) -> (reply, effects)`."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable

from cluster.metadata import access, exchanges, members, policies, queues
from cluster.metadata.commands import (
    Command,
    CommandError,
    Effect,
    Reply,
    encode_command,
    field,
    reply,
)
from cluster.metadata.tables import Record, Tables

Handler = Callable[[Tables, Command], tuple[Reply, list[Effect]]]

HANDLERS: dict[str, Handler] = {
    **access.HANDLERS,
    **exchanges.HANDLERS,
    **queues.HANDLERS,
    **policies.HANDLERS,
    **members.HANDLERS,
}


def batch(tables: Tables, command: Command) -> tuple[Reply, list[Effect]]:
    """Apply several commands as one entry (a node's definitions when it starts sharing them);
    each gets its own status, and one that cannot be applied changes nothing of its own."""
    statuses: list[str] = []
    effects: list[Effect] = []
    for item in field(command, "commands", list):
        op = item.get("op") if isinstance(item, dict) else None
        handler = HANDLERS.get(op) if isinstance(op, str) else None
        if handler is None:
            statuses.append("error")
            continue
        try:
            result, item_effects = handler(tables, item)
        except CommandError:
            statuses.append("error")
            continue
        statuses.append(result["status"])
        effects.extend(item_effects)
    return reply("ok", statuses=statuses), effects


HANDLERS["batch"] = batch


class MetadataState:
    """Vhosts, users, permissions, exchanges, bindings, queues, policies, parameters, members.

    Every node applies the same committed commands in the same order and so holds the same
    state. `apply` never raises: a malformed command gets an "error" reply and changes nothing.
    Effects tell the local node what to do outside the store (start a queue it is home to, ...).
    """

    def __init__(self, tables: Tables | None = None) -> None:
        self._tables = tables or Tables()

    def apply(self, command: Command) -> tuple[Reply, list[Effect]]:
        """Apply one committed command."""
        try:
            # A private copy, and proof that the command survives the trip through the log.
            command = json.loads(encode_command(command))
        except (TypeError, ValueError) as error:
            return reply("error", reason=f"not a JSON command: {error}"), []
        op = command.get("op")
        handler = HANDLERS.get(op) if isinstance(op, str) else None
        if handler is None:
            return reply("error", reason=f"unknown command {op!r}"), []
        # Handlers validate before they change anything, so an error leaves the state as it was.
        try:
            result = handler(self._tables, command)
        except CommandError as error:
            return reply("error", reason=str(error)), []
        # Replies share records with the tables; callers get copies they may change freely.
        return copy.deepcopy(result)

    def snapshot(self) -> bytes:
        """The whole state as canonical JSON."""
        return self._tables.to_json()

    @classmethod
    def restore(cls, data: bytes) -> MetadataState:
        """The state a `snapshot` captured."""
        return cls(Tables.from_json(data))

    # -- reads ---------------------------------------------------------------------------

    # Reads return the stored records themselves, for speed: treat them as read-only.

    def vhost(self, name: str) -> Record | None:
        return self._tables.vhosts.get((name,))

    def vhosts(self) -> list[Record]:
        return _in_order(self._tables.vhosts)

    def user(self, name: str) -> Record | None:
        return self._tables.users.get((name,))

    def users(self) -> list[Record]:
        return _in_order(self._tables.users)

    def permissions(self, user: str | None = None, vhost: str | None = None) -> list[Record]:
        return [
            record
            for record in _in_order(self._tables.permissions)
            if (user is None or record["user"] == user)
            and (vhost is None or record["vhost"] == vhost)
        ]

    def exchange(self, vhost: str, name: str) -> Record | None:
        return self._tables.exchanges.get((vhost, name))

    def exchanges(self, vhost: str | None = None) -> list[Record]:
        return _in_vhost(self._tables.exchanges, vhost)

    def bindings(self, vhost: str | None = None) -> list[Record]:
        return [
            {key: value for key, value in record.items() if key != "args_key"}
            for record in _in_vhost(self._tables.bindings, vhost)
        ]

    def queue(self, vhost: str, name: str) -> Record | None:
        return self._tables.queues.get((vhost, name))

    def queues(self, vhost: str | None = None) -> list[Record]:
        return _in_vhost(self._tables.queues, vhost)

    def policies(self, vhost: str | None = None) -> list[Record]:
        return _in_vhost(self._tables.policies, vhost)

    def operator_policies(self, vhost: str | None = None) -> list[Record]:
        return _in_vhost(self._tables.operator_policies, vhost)

    def parameters(self, component: str | None = None, vhost: str | None = None) -> list[Record]:
        return [
            record
            for record in _in_order(self._tables.parameters)
            if (component is None or record["component"] == component)
            and (vhost is None or record["vhost"] == vhost)
        ]

    def global_parameter(self, name: str) -> Record | None:
        return self._tables.global_parameters.get((name,))

    def global_parameters(self) -> list[Record]:
        return _in_order(self._tables.global_parameters)

    def members(self) -> list[Record]:
        return _in_order(self._tables.members)


def _in_order(table: dict[tuple[str, ...], Record]) -> list[Record]:
    return [table[key] for key in sorted(table)]


def _in_vhost(table: dict[tuple[str, ...], Record], vhost: str | None) -> list[Record]:
    return [record for record in _in_order(table) if vhost is None or record["vhost"] == vhost]
