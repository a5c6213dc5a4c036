"""Commands on the registry of cluster members and the addresses peers reach them at."""

from __future__ import annotations

from cluster.metadata.commands import Command, Effect, Reply, field, reply
from cluster.metadata.tables import Tables


def add_member(tables: Tables, command: Command) -> tuple[Reply, list[Effect]]:
    """Record a node and its cluster address (Raft voting membership is changed separately)."""
    name, address = field(command, "name", str), field(command, "address", str)
    current = tables.members.get((name,))
    if current is not None and current["address"] == address:
        return reply("exists"), []
    tables.put("members", {"name": name, "address": address})
    status = "updated" if current is not None else "created"
    return reply(status), [{"type": "member_added", "name": name, "address": address}]


def remove_member(tables: Tables, command: Command) -> tuple[Reply, list[Effect]]:
    """Forget a node; it stays out until added again."""
    name = field(command, "name", str)
    if tables.members.pop((name,), None) is None:
        return reply("not_found"), []
    return reply("deleted"), [{"type": "member_removed", "name": name}]


HANDLERS = {
    "add_member": add_member,
    "remove_member": remove_member,
}
