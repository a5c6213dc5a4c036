"""The node's model: virtual hosts, users and permissions, open sessions, and resource alarms."""

from __future__ import annotations

import functools
import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .auth import User, check_password, hash_password
from .config import Config
from .definitions_log import DefinitionsLog, Record, decode_arguments
from .definitions_registry import DefinitionsRegistry, Parameter, Policy
from .direct_reply import DirectReplyRegistry
from .persistence import MessageStores
from .policy_effects import apply_to_exchange, apply_to_queue, follow_policies
from .queues.remote import HomeLinks
from .shared_metadata import SharedMetadata
from .vhost import VirtualHost, binding_record, exchange_record, queue_record

if TYPE_CHECKING:
    from .session import Session

log = logging.getLogger(__name__)


@dataclass(slots=True)
class Permission:
    configure: str = ".*"
    write: str = ".*"
    read: str = ".*"


class Broker:
    def __init__(
        self,
        config: Config,
        *,
        definitions: DefinitionsLog | None = None,
        stores: MessageStores | None = None,
    ) -> None:
        self.config = config
        self.definitions = definitions
        self.stores = stores
        self.vhosts: dict[str, VirtualHost] = {}
        self.users: dict[str, User] = {}
        self.permissions: dict[tuple[str, str], Permission] = {}  # (user, vhost)
        self.sessions: set[Session] = set()
        self.alarms: set[str] = set()
        self.direct_reply = DirectReplyRegistry()
        # Set on a clustered node: definitions are then decided by the cluster's store and
        # applied to this model by it, never changed here directly (see shared_metadata).
        self.shared: SharedMetadata | None = None
        # Set on a clustered node: the links that carry operations on remote queues to their
        # home nodes.
        self.links: HomeLinks | None = None
        # Policies, operator policies and parameters: they act on queues and exchanges as they
        # change, and are journaled like every other definition.
        self.registry = DefinitionsRegistry()
        follow_policies(self, self.registry)
        self.registry.subscribe(self._journal_registry)
        if definitions is None:
            self._add_defaults()

    def _add_defaults(self) -> None:
        config = self.config
        self.add_vhost(config.default_vhost)
        self.add_user(config.default_user, config.default_pass, ["administrator"])
        self.set_permissions(config.default_user, config.default_vhost, Permission())

    # --- recovery -----------------------------------------------------------------------------

    def recover(self) -> None:
        """Rebuild durable definitions and queues from disk (a new node gets the defaults)."""
        assert self.definitions is not None
        records = self.definitions.load()
        journal, self.definitions = self.definitions, None  # replaying must not journal again
        try:
            if not records:
                self._add_defaults()
            for record in records:
                self._apply(record)
            if self.stores is not None:
                for vhost in self.vhosts.values():
                    self.stores.forget_unknown_queues(
                        vhost.name, {q.name for q in vhost.queues.values() if q.store}
                    )
                self.stores.finish_recovery()
        finally:
            self.definitions = journal
        for vhost in self.vhosts.values():
            vhost.definitions = journal
        journal.compact(self.durable_records())
        log.info(
            "recovered %d vhost(s), %d durable queue(s) with %d message(s)",
            len(self.vhosts),
            sum(len(v.queues) for v in self.vhosts.values()),
            sum(q.message_count for v in self.vhosts.values() for q in v.queues.values()),
        )

    def _apply(self, record: Record) -> None:
        kind = record["kind"]
        if kind == "vhost":
            self.add_vhost(record["name"])
        elif kind == "user":
            self.users[record["name"]] = User(
                record["name"], record["password_hash"], list(record["tags"])
            )
        elif kind == "permission":
            self.permissions[(record["user"], record["vhost"])] = Permission(
                record["configure"], record["write"], record["read"]
            )
        else:
            vhost = self.vhosts.get(record["vhost"])
            if vhost is None:
                return
            if kind == "exchange":
                vhost.restore_exchange(record)
            elif kind == "queue":
                vhost.add_queue(
                    record["name"],
                    durable=True,
                    exclusive_owner=None,
                    auto_delete=record["auto_delete"],
                    arguments=decode_arguments(record["arguments"]),
                    argument_types=dict(record["argument_types"]),
                )
            elif kind == "binding":
                vhost.restore_binding(record)
            elif kind == "registry":
                self._restore_registry(record)

    def _journal_registry(self, what: str, vhost: str) -> None:
        if self.definitions is None:
            return
        if what == "vhost":
            self.definitions.delete({"kind": "registry", "vhost": vhost})
        elif what in ("policy", "operator_policy", "parameter"):
            self.definitions.put(self._registry_record(vhost))

    def _registry_record(self, vhost: str) -> Record:
        """A vhost's policies and parameters, journaled whole: they change rarely."""
        registry = self.registry
        return {
            "kind": "registry",
            "vhost": vhost,
            "policies": [
                {"policy_kind": kind, **policy.as_json()}
                for kind in ("policy", "operator_policy")
                for policy in registry.policies(kind, vhost)  # type: ignore[arg-type]
            ],
            "parameters": [p.as_json() for p in registry.parameters(vhost=vhost)],
        }

    def _restore_registry(self, record: Record) -> None:
        for entry in record["policies"]:
            policy = Policy(
                entry["vhost"],
                entry["name"],
                entry["pattern"],
                entry["definition"],
                entry["priority"],
                entry["apply-to"],
            )
            self.registry.set_policy(entry["policy_kind"], policy)
        for entry in record["parameters"]:
            self.registry.set_parameter(
                Parameter(entry["component"], entry["vhost"], entry["name"], entry["value"])
            )

    def durable_records(self) -> list[Record]:
        """Everything that must survive a restart, in an order that can be replayed."""
        records: list[Record] = []
        records += [{"kind": "vhost", "name": name} for name in self.vhosts]
        records += [
            {"kind": "user", "name": u.name, "password_hash": u.password_hash, "tags": u.tags}
            for u in self.users.values()
        ]
        records += [
            {
                "kind": "permission",
                "user": user,
                "vhost": vhost,
                "configure": p.configure,
                "write": p.write,
                "read": p.read,
            }
            for (user, vhost), p in self.permissions.items()
        ]
        for vhost in self.vhosts.values():
            records += [
                exchange_record(vhost.name, e)
                for e in vhost.exchanges.values()
                if e.durable and not e.name.startswith("amq.") and e.name
            ]
            records += [
                queue_record(vhost.name, q)
                for q in vhost.queues.values()
                if q.durable and q.exclusive_owner is None
            ]
            for exchange in vhost.exchanges.values():
                records += [
                    binding_record(vhost.name, b, b.argument_table())
                    for b in exchange.bindings()
                    if vhost._is_durable(b)
                ]
            registry = self._registry_record(vhost.name)
            if registry["policies"] or registry["parameters"]:
                records.append(registry)
        return records

    # --- definitions --------------------------------------------------------------------------

    def share_metadata(self, shared: SharedMetadata) -> None:
        """From now on `shared` decides every definition change and applies it to this model;
        the node's own journal is no longer written."""
        self.shared = shared
        self.definitions = None
        for vhost in self.vhosts.values():
            vhost.definitions = None
            vhost.shared = shared

    def link_queues(self, links: HomeLinks | None) -> None:
        """Operations on queues homed on other nodes go through `links` (None: nowhere)."""
        self.links = links
        for vhost in self.vhosts.values():
            vhost.links = links

    def add_vhost(self, name: str) -> VirtualHost:
        vhost = self.vhosts.get(name)
        if vhost is None:
            vhost = self.vhosts[name] = VirtualHost(
                name, definitions=self.definitions, stores=self.stores
            )
            vhost.shared = self.shared
            vhost.links = self.links
            vhost.on_queue_created = lambda queue: apply_to_queue(self.registry, queue)
            vhost.on_exchange_created = lambda exchange: apply_to_exchange(
                self.registry, name, exchange
            )
            if self.definitions is not None:
                self.definitions.put({"kind": "vhost", "name": name})
        return vhost

    def add_user(self, name: str, password: str, tags: list[str] | None = None) -> User:
        user = self.users[name] = User(name, hash_password(password), list(tags or []))
        if self.definitions is not None:
            self.definitions.put(
                {
                    "kind": "user",
                    "name": name,
                    "password_hash": user.password_hash,
                    "tags": user.tags,
                }
            )
        return user

    def set_permissions(self, user: str, vhost: str, permission: Permission) -> None:
        self.permissions[(user, vhost)] = permission
        if self.definitions is not None:
            self.definitions.put(
                {
                    "kind": "permission",
                    "user": user,
                    "vhost": vhost,
                    "configure": permission.configure,
                    "write": permission.write,
                    "read": permission.read,
                }
            )

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
        # RabbitMQ matches permissions unanchored (re:run): '^' and '$' anchor when wanted.
        return bool(pattern) and _search(pattern, resource)

    # --- sessions and alarms ------------------------------------------------------------------

    def session_opened(self, session: Session) -> None:
        self.sessions.add(session)
        if self.alarms:
            session.set_alarm(self._alarm_reason())

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
            session.set_alarm(reason)

    def _alarm_reason(self) -> str:
        return "low on " + " & ".join(sorted(self.alarms))


@functools.lru_cache(maxsize=1024)
def _compiled(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except re.error:
        return None


def _search(pattern: str, resource: str) -> bool:
    compiled = _compiled(pattern)
    return compiled is not None and compiled.search(resource) is not None
