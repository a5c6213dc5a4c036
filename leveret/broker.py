"""The node's model: virtual hosts, users and permissions, and resource alarms."""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass

from .auth import User, check_password
from .busy_poll import BusyPoll
from .config import Config
from .definitions_registry import DefinitionsRegistry
from .direct_reply import DirectReplyRegistry
from .federation_links import FederationLinks
from .metadata import MetadataStore
from .pending_writes import PendingWrites
from .persistence import MessageStores
from .policy_effects import apply_to_exchange, apply_to_queue, follow_policies
from .queues.remote import HomeLinks
from .vhost import VirtualHost

log = logging.getLogger(__name__)


@dataclass(slots=True)
class Permission:
    configure: str = ".*"
    write: str = ".*"
    read: str = ".*"


class Broker:
    def __init__(self, config: Config, *, stores: MessageStores | None = None) -> None:
        self.config = config
        self.stores = stores
        self.vhosts: dict[str, VirtualHost] = {}
        self.users: dict[str, User] = {}
        self.permissions: dict[tuple[str, str], Permission] = {}  # (user, vhost)
        self.alarms: set[str] = set()
        # The alarms of the other running nodes (from their gossip reports): RabbitMQ's resource
        # alarms are cluster-wide, so one node short of memory or disk blocks every publisher.
        self.peer_alarms: frozenset[str] = frozenset()
        # Draining for a stop (a rolling restart): publishers are blocked as by an alarm.
        self.draining = False
        # Called with whether any alarm is in effect, each time this node's alarms change.
        self.alarm_listeners: list[Callable[[bool], None]] = []
        # Called with what blocks publishers (None once nothing does), each time that changes:
        # how the open connections hear of alarms and the drain.
        self.blocking_listeners: list[Callable[[str | None], None]] = []
        self.direct_reply = DirectReplyRegistry(config.node_name)
        # Decides every definition change and applies it to this model, which is never changed
        # here directly (see metadata); set by the node before anything is defined.
        self.metadata: MetadataStore
        # The links that carry operations on queues homed on other nodes to those nodes.
        self.links: HomeLinks | None = None
        # Client connections whose frames already read wait for another turn of the event loop
        # (the node is busy): output to other nodes may then wait a turn or two to go in fewer,
        # larger writes.
        self.connections_mid_read = 0
        # Connections (clients', home sessions of links) with output waiting for the end of this
        # turn of the event loop.
        self.pending_writes = PendingWrites()
        # Keeps the event loop polling for a while after the sockets brought something.
        self.busy_poll = BusyPoll(config.busy_poll_microseconds / 1e6)
        # The federation links this node runs, when the node has the federation extension.
        self.federation: FederationLinks | None = None
        # How many connections ("vhost", "user") or channels ("user_channels") the other nodes
        # of the cluster hold for a vhost or user, as gossip last told: limits count them too.
        self.peer_clients: Callable[[str, str], int] = lambda kind, name: 0
        # Policies, operator policies and parameters: they act on queues and exchanges as they
        # change.
        self.registry = DefinitionsRegistry()
        follow_policies(self.vhosts, self.registry)

    # --- definitions --------------------------------------------------------------------------

    def use_metadata(self, metadata: MetadataStore) -> None:
        """`metadata` decides every definition change from now on and applies it to this model."""
        self.metadata = metadata
        for vhost in self.vhosts.values():
            vhost.metadata = metadata

    def link_queues(self, links: HomeLinks | None) -> None:
        """Operations on queues homed on other nodes go through `links` (None: nowhere)."""
        self.links = links
        for vhost in self.vhosts.values():
            vhost.links = links

    def add_vhost(self, name: str) -> VirtualHost:
        vhost = self.vhosts.get(name)
        if vhost is None:
            vhost = self.vhosts[name] = VirtualHost(name, self.metadata, stores=self.stores)
            vhost.links = self.links
            vhost.on_queue_created = lambda queue: apply_to_queue(self.registry, queue)
            vhost.on_exchange_created = lambda exchange: apply_to_exchange(
                self.registry, name, exchange
            )
        return vhost

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

    # --- alarms and the drain -----------------------------------------------------------------

    def set_alarm(self, resource: str, active: bool) -> None:
        """A resource alarm (memory, disk) blocks every publishing connection while it lasts."""
        if (resource in self.alarms) == active:
            return
        before = bool(self.alarms)
        if active:
            self.alarms.add(resource)
        else:
            self.alarms.discard(resource)
        if bool(self.alarms) != before:
            log.warning("resource alarm %s %s", resource, "set" if active else "cleared")
            self._tell_blocking()
        # (every change: the other nodes' reasons name each resource in alarm)
        for listener in list(self.alarm_listeners):
            listener(bool(self.alarms))

    def set_peer_alarms(self, resources: frozenset[str]) -> None:
        """The resources in alarm on other running nodes of the cluster are now `resources`."""
        if resources == self.peer_alarms:
            return
        before = self.blocking_reason()
        self.peer_alarms = resources
        if self.blocking_reason() != before:
            log.warning(
                "resource alarm on another node %s",
                f"set: {', '.join(sorted(resources))}" if resources else "cleared",
            )
            self._tell_blocking()

    def start_draining(self) -> None:
        """Block every publishing connection for good: the node is about to stop."""
        self.draining = True
        self._tell_blocking()

    def _tell_blocking(self) -> None:
        reason = self.blocking_reason()
        for listener in list(self.blocking_listeners):
            listener(reason)

    def blocking_reason(self) -> str | None:
        """What connection.blocked says while publishers must wait, None when they need not."""
        if self.draining:
            return "node is draining"
        alarms = self.alarms | self.peer_alarms
        if alarms:
            return "low on " + " & ".join(sorted(alarms))
        return None


@functools.lru_cache(maxsize=1024)
def _compiled(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except re.error:
        return None


def _search(pattern: str, resource: str) -> bool:
    compiled = _compiled(pattern)
    return compiled is not None and compiled.search(resource) is not None
