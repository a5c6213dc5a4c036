"""Commands on the registry of cluster members and the addresses peers reach them at."""

from __future__ import annotations

from cluster.metadata.replies import Handlers, Reply, reply
from cluster.metadata.tables import Tables
from proto.metadata_schema import (
    AddMember,
    Effect,
    MemberAdded,
    MemberRecord,
    MemberRemoved,
    RemoveMember,
)


def add_member(tables: Tables, command: AddMember) -> tuple[Reply, list[Effect]]:
    """Record a node and its cluster address (Raft voting membership is changed separately)."""
    name, address = command.name, command.address
    current = tables.members.get((name,))
    if current is not None and current.address == address:
        return reply("exists"), []
    tables.put("members", MemberRecord(name=name, address=address))
    status = "updated" if current is not None else "created"
    return reply(status), [MemberAdded(name=name, address=address)]


def remove_member(tables: Tables, command: RemoveMember) -> tuple[Reply, list[Effect]]:
    """Forget a node; it stays out until added again."""
    if tables.members.pop((command.name,), None) is None:
        return reply("not_found"), []
    return reply("deleted"), [MemberRemoved(name=command.name)]


HANDLERS: Handlers = {
    AddMember: add_member,
    RemoveMember: remove_member,
}
