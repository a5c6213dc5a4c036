"""Changes to the model that the management layer and the cluster's mirror make beside channels.

Definitions are changed by the replicated store alone (see leveret.metadata); these are
the steps that follow from its decisions, or that are no definitions at all (closing a client).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..auth import hash_password
from ..session import open_sessions

if TYPE_CHECKING:
    from ..auth import User
    from ..broker import Broker


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


def delete_vhost(broker: Broker, name: str) -> bool:
    """Close the vhost's connections, delete its queues (and their messages), its permissions,
    and itself."""
    vhost = broker.vhosts.get(name)
    if vhost is None:
        return False
    for session in list(open_sessions(broker)):
        if session.vhost is vhost:
            session.close_forced(f"vhost '{name}' is deleted")
    for queue_name in list(vhost.queues):
        vhost.delete_queue(queue_name)
    for key in [key for key in broker.permissions if key[1] == name]:
        del broker.permissions[key]
    del broker.vhosts[name]
    return True
