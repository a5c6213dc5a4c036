"""Who is calling the management API, and what their user tags and permissions allow.

RabbitMQ's rules: any of the tags management, policymaker, monitoring and administrator opens
the API; monitoring sees every connection, channel and node; policymaker manages policies and
parameters of the vhosts it has permissions in; administrator does everything, in every vhost.
Refusals are 401 with "not_authorised", as RabbitMQ 3.10 answers them.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..auth import is_loopback
from .errors import ApiError, credentials_missing, login_failed, not_authorised, object_not_found

if TYPE_CHECKING:
    from ..broker import Broker
    from .state import AuthCounts

MANAGEMENT_TAGS = frozenset({"management", "policymaker", "monitoring", "administrator"})


@dataclass(frozen=True, slots=True)
class Caller:
    name: str
    tags: frozenset[str]

    @property
    def is_admin(self) -> bool:
        return "administrator" in self.tags

    @property
    def is_monitor(self) -> bool:
        return self.is_admin or "monitoring" in self.tags

    @property
    def is_policymaker(self) -> bool:
        return self.is_admin or "policymaker" in self.tags


# The caller of a route that needs no credentials (the probes).
ANONYMOUS = Caller("", frozenset())


def authenticate(broker: Broker, authorization: str, peer_host: str, counts: AuthCounts) -> Caller:
    """The caller behind an Authorization header, allowed into the API at all, or ApiError."""
    if not authorization:
        raise credentials_missing()
    scheme, _, encoded = authorization.partition(" ")
    if scheme.lower() != "basic":
        raise credentials_missing()
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise ApiError(400, None) from None
    username, sep, password = decoded.partition(":")
    counts.attempts += 1
    if not sep or broker.authenticate(username, password) is not None:
        counts.failed += 1
        raise login_failed()
    if username in broker.config.loopback_users and not is_loopback(peer_host):
        counts.failed += 1
        raise ApiError(401, "not_authorized", "User can only log in via localhost")
    counts.succeeded += 1
    tags = frozenset(broker.users[username].tags)
    if not tags & MANAGEMENT_TAGS:
        raise not_authorised("Not management user")
    return Caller(username, tags)


def require_admin(caller: Caller) -> None:
    if not caller.is_admin:
        raise not_authorised("Not administrator user")


def require_monitor(caller: Caller) -> None:
    if not caller.is_monitor:
        raise not_authorised("Not monitor user")


def require_policymaker(caller: Caller) -> None:
    if not caller.is_policymaker:
        raise not_authorised("User not authorised to access object")


def may_use_vhost(broker: Broker, caller: Caller, vhost: str) -> bool:
    return caller.is_admin or broker.may_access_vhost(caller.name, vhost)


def require_vhost(broker: Broker, caller: Caller, vhost: str) -> None:
    """The vhost exists (else 404) and the caller may work in it (else 401)."""
    if vhost not in broker.vhosts:
        raise object_not_found()
    if not may_use_vhost(broker, caller, vhost):
        raise not_authorised("User not authorised to access virtual host")


def login_vhosts(broker: Broker, caller: Caller) -> list[str]:
    """Vhosts whose queues, exchanges and bindings the caller sees in listings."""
    return [name for name in broker.vhosts if may_use_vhost(broker, caller, name)]


def visible_vhosts(broker: Broker, caller: Caller) -> list[str]:
    """Vhosts the caller sees in /api/vhosts: all of them for monitors."""
    if caller.is_monitor:
        return list(broker.vhosts)
    return login_vhosts(broker, caller)


def sees_user_objects(caller: Caller, owner: str) -> bool:
    """Connections, channels and consumers: monitors see everyone's, others their own."""
    return caller.is_monitor or caller.name == owner
