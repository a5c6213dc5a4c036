"""Changes to users, permissions and vhosts that the broker has no method for yet.

Each function keeps the broker's journal of durable definitions in step, as the broker's own
`add_*` methods do. They belong on `Broker` (and `Session`) eventually; until then they live here
so the management layer touches the model's dictionaries in one place.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..amqp.errors import AMQPError, ReplyCode
from ..auth import User, hash_password

if TYPE_CHECKING:
    from ..broker import Broker
    from ..session import Session

EXCHANGE_DELETE = (40, 20)


def force_close(session: Session, reason: str) -> None:
    """Close a client connection with 320 CONNECTION_FORCED, as RabbitMQ does from management."""
    if session.closed:
        return
    error = AMQPError(ReplyCode.CONNECTION_FORCED, reason)
    # Session's one error path: tear down channels, send connection.close, drop after a grace.
    session._connection_error(error, False)


def put_user(
    broker: Broker,
    name: str,
    tags: list[str],
    *,
    password: str | None = None,
    password_hash: str | None = None,
) -> bool:
    """Create or update a user; True if created. Without a password or hash, the old one stays
    (a new user then gets one that matches no password, so it cannot log in with one)."""
    existing = broker.users.get(name)
    password_hash = new_password_hash(existing, password, password_hash)
    user = broker.users[name] = User(name, password_hash, list(tags))
    if broker.definitions is not None:
        broker.definitions.put(
            {"kind": "user", "name": name, "password_hash": user.password_hash, "tags": user.tags}
        )
    return existing is None


def new_password_hash(
    existing: User | None, password: str | None, password_hash: str | None
) -> str:
    """The hash a user gets from a PUT: of the password, the hash given, or else the old one
    (a new user then gets one that matches no password)."""
    if password is not None:
        return hash_password(password)
    if password_hash is not None:
        return password_hash
    return existing.password_hash if existing is not None else ""


def delete_user(broker: Broker, name: str) -> bool:
    user = broker.users.pop(name, None)
    if user is None:
        return False
    for user_name, vhost in [key for key in broker.permissions if key[0] == name]:
        clear_permissions(broker, user_name, vhost)
    if broker.definitions is not None:
        broker.definitions.delete({"kind": "user", "name": name})
    return True


def clear_permissions(broker: Broker, user: str, vhost: str) -> bool:
    if broker.permissions.pop((user, vhost), None) is None:
        return False
    if broker.definitions is not None:
        broker.definitions.delete({"kind": "permission", "user": user, "vhost": vhost})
    return True


def delete_vhost(broker: Broker, name: str) -> bool:
    """Close the vhost's connections, delete its queues and exchanges, permissions, and itself."""
    vhost = broker.vhosts.get(name)
    if vhost is None:
        return False
    for session in list(broker.sessions):
        if session.vhost is vhost:
            force_close(session, f"vhost '{name}' is deleted")
    for queue_name in list(vhost.queues):
        vhost.delete_queue(queue_name)
    for exchange_name, exchange in list(vhost.exchanges.items()):
        if exchange.durable and exchange_name and not exchange_name.startswith("amq."):
            vhost.delete_exchange(exchange_name, if_unused=False, method=EXCHANGE_DELETE)
    for user, vhost_name in [key for key in broker.permissions if key[1] == name]:
        clear_permissions(broker, user, vhost_name)
    del broker.vhosts[name]
    if broker.definitions is not None:
        broker.definitions.delete({"kind": "vhost", "name": name})
    return True
