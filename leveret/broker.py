"""The node's model: virtual hosts, users and permissions, open sessions, and resource alarms."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .auth import User, check_password, hash_password
from .config import Config
from .direct_reply import DirectReplyRegistry
from .vhost import VirtualHost

if TYPE_CHECKING:
    from .session import Session

log = logging.getLogger(__name__)


@dataclass(slots=True)
class Permission:
    configure: str = ".*"
    write: str = ".*"
    read: str = ".*"


class Broker:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.vhosts: dict[str, VirtualHost] = {}
        self.users: dict[str, User] = {}
        self.permissions: dict[tuple[str, str], Permission] = {}  # (user, vhost)
        self.sessions: set[Session] = set()
        self.alarms: set[str] = set()
        self.direct_reply = DirectReplyRegistry()
        self.add_vhost(config.default_vhost)
        self.add_user(config.default_user, config.default_pass, ["administrator"])
        self.set_permissions(config.default_user, config.default_vhost, Permission())

    # --- definitions --------------------------------------------------------------------------

    def add_vhost(self, name: str) -> VirtualHost:
        vhost = self.vhosts.get(name)
        if vhost is None:
            vhost = self.vhosts[name] = VirtualHost(name)
        return vhost

    def add_user(self, name: str, password: str, tags: list[str] | None = None) -> User:
        user = self.users[name] = User(name, hash_password(password), list(tags or []))
        return user

    def set_permissions(self, user: str, vhost: str, permission: Permission) -> None:
        self.permissions[(user, vhost)] = permission

    # --- access -------------------------------------------------------------------------------

    def authenticate(self, username: str, password: str) -> str | None:
        """None when the credentials are right, otherwise the reason for the log."""
        user = self.users.get(username)
        if user is None:
            return f"user '{username}' - invalid credentials"
        if not check_password(password, user.password_hash):
            return f"user '{username}' - invalid credentials"
        return None

    def may_access_vhost(self, username: str, vhost: str) -> bool:
        return (username, vhost) in self.permissions

    def permitted(self, username: str, vhost: str, kind: str, resource: str) -> bool:
        permission = self.permissions.get((username, vhost))
        if permission is None:
            return False
        pattern = getattr(permission, kind)
        return bool(pattern) and re.fullmatch(pattern, resource) is not None

    # --- sessions and alarms ------------------------------------------------------------------

    def session_opened(self, session: Session) -> None:
        self.sessions.add(session)
        if self.alarms:
            session.set_blocked(self._alarm_reason())

    def session_closed(self, session: Session) -> None:
        self.sessions.discard(session)

    def set_alarm(self, resource: str, active: bool) -> None:
        """A resource alarm (memory, disk) blocks every publishing connection while it lasts."""
        before = bool(self.alarms)
        if active:
            self.alarms.add(resource)
        else:
            self.alarms.discard(resource)
        if bool(self.alarms) == before:
            return
        log.warning("resource alarm %s %s", resource, "set" if active else "cleared")
        reason = self._alarm_reason() if self.alarms else None
        for session in list(self.sessions):
            session.set_blocked(reason)

    def _alarm_reason(self) -> str:
        return "low on " + " and ".join(sorted(self.alarms))
