"""Commands on virtual hosts, users and permissions."""

from __future__ import annotations

from dataclasses import replace

from cluster.metadata.exchanges import remove_bindings
from cluster.metadata.replies import Handlers, Reply, reply
from cluster.metadata.tables import Tables
from proto.metadata_schema import (
    AddVhost,
    ClearPermissions,
    ClearUserLimit,
    CommandError,
    DeleteUser,
    DeleteVhost,
    Effect,
    ExchangeRecord,
    PermissionRecord,
    PermissionsChanged,
    PutUser,
    QueueDeleted,
    SetPermissions,
    SetUserLimits,
    UserChanged,
    UserDeleted,
    UserRecord,
    VhostAdded,
    VhostDeleted,
    VhostRecord,
    record_json,
)

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


def add_vhost(tables: Tables, command: AddVhost) -> tuple[Reply, list[Effect]]:
    """Create a virtual host with the standard exchanges; "exists" (and no change) if present."""
    name = command.name
    current = tables.vhosts.get((name,))
    if current is not None:
        return reply("exists", vhost=record_json(current)), []
    record = VhostRecord(
        name=name,
        description=command.description or "",
        tags=tuple(sorted(command.tags or ())),
        default_queue_type=command.default_queue_type or "classic",
    )
    tables.put("vhosts", record)
    for exchange, kind, internal in STANDARD_EXCHANGES:
        tables.put(
            "exchanges",
            ExchangeRecord(vhost=name, name=exchange, type=kind, internal=internal),
        )
    return reply("created", vhost=record_json(record)), [VhostAdded(vhost=name)]


def delete_vhost(tables: Tables, command: DeleteVhost) -> tuple[Reply, list[Effect]]:
    """Delete a virtual host and everything in it (queues are reported as effects)."""
    name = command.name
    if tables.vhosts.pop((name,), None) is None:
        return reply("not_found"), []
    effects: list[Effect] = []
    for key in sorted(key for key in tables.queues if key[0] == name):
        queue = tables.queues.pop(key)
        effects.append(QueueDeleted(vhost=name, name=queue.name))
    remove_bindings(tables, lambda binding: binding.vhost == name)
    for rows in (tables.exchanges, tables.policies, tables.operator_policies):
        for key in [key for key in rows if key[0] == name]:
            del rows[key]
    for key in [key for key in tables.parameters if key[1] == name]:
        del tables.parameters[key]
    for key in [key for key in tables.permissions if key[1] == name]:
        del tables.permissions[key]
    effects.append(VhostDeleted(vhost=name))
    return reply("deleted"), effects


def put_user(tables: Tables, command: PutUser) -> tuple[Reply, list[Effect]]:
    """Create or replace a user (the password arrives already hashed)."""
    name = command.name
    record = UserRecord(
        name=name,
        password_hash=command.password_hash,
        hashing_algorithm=command.hashing_algorithm or "rabbit_password_hashing_sha256",
        tags=tuple(sorted(command.tags)),
    )
    current = tables.users.get((name,))
    if current is not None:
        # As RabbitMQ: replacing a user's password or tags keeps its limits.
        record = replace(record, limits=current.limits)
    tables.put("users", record)
    return reply("updated" if current is not None else "created"), [UserChanged(user=name)]


def set_user_limits(tables: Tables, command: SetUserLimits) -> tuple[Reply, list[Effect]]:
    """Merge limits into a user's."""
    current = tables.users.get((command.name,))
    if current is None:
        return reply("not_found"), []
    tables.put("users", replace(current, limits={**current.limits, **command.limits}))
    return reply("updated"), [UserChanged(user=command.name)]


def clear_user_limit(tables: Tables, command: ClearUserLimit) -> tuple[Reply, list[Effect]]:
    """Remove one limit of a user, or all of them."""
    current = tables.users.get((command.name,))
    if current is None:
        return reply("not_found"), []
    limits = {} if command.limit == "all" else dict(current.limits)
    limits.pop(command.limit, None)
    tables.put("users", replace(current, limits=limits))
    return reply("deleted"), [UserChanged(user=command.name)]


def delete_user(tables: Tables, command: DeleteUser) -> tuple[Reply, list[Effect]]:
    """Delete a user and its permissions."""
    name = command.name
    if tables.users.pop((name,), None) is None:
        return reply("not_found"), []
    for key in [key for key in tables.permissions if key[0] == name]:
        del tables.permissions[key]
    return reply("deleted"), [UserDeleted(user=name)]


def set_permissions(tables: Tables, command: SetPermissions) -> tuple[Reply, list[Effect]]:
    """Grant a user configure / write / read patterns in a virtual host."""
    user, vhost = command.user, command.vhost
    if (user,) not in tables.users:
        raise CommandError(f"no such user {user!r}")
    if (vhost,) not in tables.vhosts:
        raise CommandError(f"no such vhost {vhost!r}")
    tables.put(
        "permissions",
        PermissionRecord(
            user=user,
            vhost=vhost,
            configure=command.configure,
            write=command.write,
            read=command.read,
        ),
    )
    return reply("ok"), [PermissionsChanged(user=user, vhost=vhost)]


def clear_permissions(tables: Tables, command: ClearPermissions) -> tuple[Reply, list[Effect]]:
    """Revoke a user's permissions in a virtual host."""
    user, vhost = command.user, command.vhost
    if tables.permissions.pop((user, vhost), None) is None:
        return reply("not_found"), []
    return reply("deleted"), [PermissionsChanged(user=user, vhost=vhost)]


HANDLERS: Handlers = {
    AddVhost: add_vhost,
    DeleteVhost: delete_vhost,
    PutUser: put_user,
    DeleteUser: delete_user,
    SetUserLimits: set_user_limits,
    ClearUserLimit: clear_user_limit,
    SetPermissions: set_permissions,
    ClearPermissions: clear_permissions,
}
