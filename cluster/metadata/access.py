"""Commands on virtual hosts, users and permissions."""

from __future__ import annotations

from cluster.metadata.commands import (
    Command,
    CommandError,
    Effect,
    Reply,
    field,
    reply,
    string_list,
)
from cluster.metadata.exchanges import remove_bindings
from cluster.metadata.tables import Tables

# The exchanges every virtual host starts with, as RabbitMQ creates them: (name, type, internal).
STANDARD_EXCHANGES: tuple[tuple[str, str, bool], ...] = (
    ("", "direct", False),
    ("amq.direct", "direct", False),
    ("amq.fanout", "fanout", False),
    ("amq.headers", "headers", False),
    ("amq.match", "headers", False),
    ("amq.topic", "topic", False),
    ("amq.rabbitmq.trace", "topic", True),
)


def add_vhost(tables: Tables, command: Command) -> tuple[Reply, list[Effect]]:
    """Create a virtual host with the standard exchanges; "exists" (and no change) if present."""
    name = field(command, "name", str)
    if (name,) in tables.vhosts:
        return reply("exists", vhost=tables.vhosts[(name,)]), []
    record = {
        "name": name,
        "description": field(command, "description", str, ""),
        "tags": string_list(command, "tags"),
        "default_queue_type": field(command, "default_queue_type", str, "classic"),
    }
    tables.put("vhosts", record)
    effects: list[Effect] = [{"type": "vhost_added", "vhost": name}]
    for exchange, kind, internal in STANDARD_EXCHANGES:
        tables.put(
            "exchanges",
            {
                "vhost": name,
                "name": exchange,
                "type": kind,
                "durable": True,
                "auto_delete": False,
                "internal": internal,
                "arguments": {},
            },
        )
    return reply("created", vhost=record), effects


def delete_vhost(tables: Tables, command: Command) -> tuple[Reply, list[Effect]]:
    """Delete a virtual host and everything in it (queues are reported as effects)."""
    name = field(command, "name", str)
    if tables.vhosts.pop((name,), None) is None:
        return reply("not_found"), []
    effects: list[Effect] = []
    for key in sorted(key for key in tables.queues if key[0] == name):
        queue = tables.queues.pop(key)
        effects.append({"type": "queue_deleted", "vhost": name, "name": queue["name"]})
    remove_bindings(tables, lambda binding: binding["vhost"] == name)
    for table in ("exchanges", "policies", "operator_policies"):
        rows = getattr(tables, table)
        for key in [key for key in rows if key[0] == name]:
            del rows[key]
    for key in [key for key in tables.parameters if key[1] == name]:
        del tables.parameters[key]
    for key in [key for key in tables.permissions if key[1] == name]:
        del tables.permissions[key]
    effects.append({"type": "vhost_deleted", "vhost": name})
    return reply("deleted"), effects


def put_user(tables: Tables, command: Command) -> tuple[Reply, list[Effect]]:
    """Create or replace a user (the password arrives already hashed)."""
    name = field(command, "name", str)
    record = {
        "name": name,
        "password_hash": field(command, "password_hash", str, ""),
        "hashing_algorithm": field(
            command, "hashing_algorithm", str, "rabbit_password_hashing_sha256"
        ),
        "tags": string_list(command, "tags"),
    }
    status = "updated" if (name,) in tables.users else "created"
    tables.put("users", record)
    return reply(status), [{"type": "user_changed", "user": name}]


def delete_user(tables: Tables, command: Command) -> tuple[Reply, list[Effect]]:
    """Delete a user and its permissions."""
    name = field(command, "name", str)
    if tables.users.pop((name,), None) is None:
        return reply("not_found"), []
    for key in [key for key in tables.permissions if key[0] == name]:
        del tables.permissions[key]
    return reply("deleted"), [{"type": "user_deleted", "user": name}]


def set_permissions(tables: Tables, command: Command) -> tuple[Reply, list[Effect]]:
    """Grant a user configure / write / read patterns in a virtual host."""
    user, vhost = field(command, "user", str), field(command, "vhost", str)
    if (user,) not in tables.users:
        raise CommandError(f"no such user {user!r}")
    if (vhost,) not in tables.vhosts:
        raise CommandError(f"no such vhost {vhost!r}")
    tables.put(
        "permissions",
        {
            "user": user,
            "vhost": vhost,
            "configure": field(command, "configure", str),
            "write": field(command, "write", str),
            "read": field(command, "read", str),
        },
    )
    return reply("ok"), [{"type": "permissions_changed", "user": user, "vhost": vhost}]


def clear_permissions(tables: Tables, command: Command) -> tuple[Reply, list[Effect]]:
    """Revoke a user's permissions in a virtual host."""
    user, vhost = field(command, "user", str), field(command, "vhost", str)
    if tables.permissions.pop((user, vhost), None) is None:
        return reply("not_found"), []
    return reply("deleted"), [{"type": "permissions_changed", "user": user, "vhost": vhost}]


HANDLERS = {
    "add_vhost": add_vhost,
    "delete_vhost": delete_vhost,
    "put_user": put_user,
    "delete_user": delete_user,
    "set_permissions": set_permissions,
    "clear_permissions": clear_permissions,
}
