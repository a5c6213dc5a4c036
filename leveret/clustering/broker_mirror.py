"""Keeps a clustered node's broker model equal to the replicated metadata.

Committed commands reach every node as effects naming what changed; for each, the mirror reads
the record from the metadata and makes the local model match it (create, replace or remove), so
applying an effect twice, or after a snapshot, does no harm. Queues whose home is this node run
here (durable ones with their messages on disk); the others are known as `RemoteQueue`s.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from cluster.metadata import MetadataState
from leveret.auth import User
from leveret.broker import Broker, Permission
from leveret.definitions_log import decode_arguments
from leveret.definitions_registry import Parameter, Policy
from leveret.metadata import MetadataStore
from leveret.metadata_commands import binding_of, delete_queue, exchange_decl, queue_decl
from leveret.mgmt.broker_ops import delete_vhost
from leveret.names import RUN_ID
from leveret.queues.remote import RemoteQueue
from leveret.vhost import VirtualHost
from proto.metadata_schema import (
    BindingCreated,
    BindingDeleted,
    BindingRecord,
    Effect,
    ExchangeCreated,
    ExchangeDeleted,
    GlobalParameterChanged,
    OperatorPolicyChanged,
    ParameterChanged,
    PermissionsChanged,
    PolicyChanged,
    QueueCreated,
    QueueDeleted,
    UserChanged,
    UserDeleted,
    VhostAdded,
    VhostDeleted,
)

from ..session import open_sessions

log = logging.getLogger(__name__)


class BrokerMirror:
    """Applies the replicated metadata to one node's broker."""

    def __init__(
        self, broker: Broker, metadata: MetadataStore, state: Callable[[], MetadataState]
    ) -> None:
        self._broker = broker
        self._metadata = metadata
        self._state = state
        self._node = metadata.node_name
        # How often the model had to be rebuilt because an effect could not be applied.
        self.repairs = 0

    # -- everything at once ----------------------------------------------------------------

    def rebuild(self) -> None:
        """Make the whole model match the metadata (at boot, and after a snapshot arrived)."""
        state, broker = self._state(), self._broker
        wanted = {record.name for record in state.vhosts()}
        for name in [name for name in broker.vhosts if name not in wanted]:
            delete_vhost(broker, name)
        broker.users = {r.name: User(r.name, r.password_hash, list(r.tags)) for r in state.users()}
        broker.registry.user_limits = {r.name: dict(r.limits) for r in state.users() if r.limits}
        broker.permissions = {
            (r.user, r.vhost): Permission(r.configure, r.write, r.read) for r in state.permissions()
        }
        for parameter in state.global_parameters():
            self._sync_global_parameter(parameter.name)
        for vhost in state.vhosts():
            self._sync_vhost(vhost.name)

    # -- one change at a time --------------------------------------------------------------

    def apply(self, effects: list[Effect]) -> None:
        """Make the model match the metadata for what `effects` name.

        An effect that cannot be applied means this node's model no longer matches the
        replicated metadata: the node says so and rebuilds the whole model from the store,
        which covers the effects after it too.
        """
        for effect in effects:
            try:
                self._apply(effect)
            except Exception:
                self.repairs += 1
                log.exception(
                    "this node's model diverged from the replicated metadata (applying %s "
                    "failed); rebuilding it from the store",
                    effect,
                )
                self.rebuild()
                return

    def _apply(self, effect: Effect) -> None:
        broker = self._broker
        match effect:
            case VhostAdded(vhost=name):
                self._sync_vhost(name)
            case VhostDeleted(vhost=name):
                delete_vhost(broker, name)
                broker.registry.forget_vhost(name)
            case UserChanged(user=user) | UserDeleted(user=user):
                self._sync_user(user)
            case PermissionsChanged(user=user, vhost=name):
                self._sync_permission(user, name)
            case (
                ExchangeCreated(vhost=name, name=exchange)
                | ExchangeDeleted(vhost=name, name=exchange)
            ):
                vhost = broker.vhosts.get(name)
                if vhost is not None:
                    self._sync_exchange(vhost, exchange)
            case QueueCreated(vhost=name, name=queue) | QueueDeleted(vhost=name, name=queue):
                vhost = broker.vhosts.get(name)
                if vhost is not None:
                    self._sync_queue(vhost, queue)
            case BindingCreated(binding=binding):
                self._sync_binding(True, binding)
            case BindingDeleted(binding=binding):
                self._sync_binding(False, binding)
            case PolicyChanged(vhost=name, name=policy):
                self._sync_policy("policy", name, policy)
            case OperatorPolicyChanged(vhost=name, name=policy):
                self._sync_policy("operator_policy", name, policy)
            case ParameterChanged(component=component, vhost=name, name=parameter):
                self._sync_parameter(component, name, parameter)
            case GlobalParameterChanged(name=name):
                self._sync_global_parameter(name)

    # -- access ----------------------------------------------------------------------------

    def _sync_user(self, name: str) -> None:
        broker, record = self._broker, self._state().user(name)
        if record is None:
            broker.users.pop(name, None)
            for key in [key for key in broker.permissions if key[0] == name]:
                del broker.permissions[key]
            broker.registry.user_limits.pop(name, None)
            return
        broker.users[name] = User(name, record.password_hash, list(record.tags))
        if record.limits:
            broker.registry.user_limits[name] = dict(record.limits)
        else:
            broker.registry.user_limits.pop(name, None)

    def _sync_permission(self, user: str, vhost: str) -> None:
        broker = self._broker
        record = next(iter(self._state().permissions(user, vhost)), None)
        if record is None:
            broker.permissions.pop((user, vhost), None)
        else:
            broker.permissions[(user, vhost)] = Permission(
                record.configure, record.write, record.read
            )

    # -- virtual hosts ---------------------------------------------------------------------

    def _sync_vhost(self, name: str) -> None:
        state, broker = self._state(), self._broker
        record = state.vhost(name)
        if record is None:
            return
        vhost = broker.add_vhost(name)
        metadata = broker.registry.metadata(name)
        metadata.description = record.description
        metadata.tags = list(record.tags)
        for user, vhost_name in [(r.user, r.vhost) for r in state.permissions(vhost=name)]:
            self._sync_permission(user, vhost_name)
        for kind, records in (
            ("policy", state.policies(name)),
            ("operator_policy", state.operator_policies(name)),
        ):
            wanted = {r.name for r in records}
            for policy in broker.registry.policies(kind, name):  # type: ignore[arg-type]
                if policy.name not in wanted:
                    broker.registry.clear_policy(kind, name, policy.name)  # type: ignore[arg-type]
            for r in records:
                self._sync_policy(kind, name, r.name)
        wanted_parameters = {(r.component, r.name) for r in state.parameters(vhost=name)}
        for parameter in broker.registry.parameters(vhost=name):
            if (parameter.component, parameter.name) not in wanted_parameters:
                broker.registry.clear_parameter(parameter.component, name, parameter.name)
        for component, parameter_name in wanted_parameters:
            self._sync_parameter(component, name, parameter_name)
        exchanges = {r.name for r in state.exchanges(name)}
        for exchange_name in set(vhost.exchanges) | exchanges:
            self._sync_exchange(vhost, exchange_name)
        queues = {r.name for r in state.queues(name)}
        for queue_name in set(vhost.queues) | set(vhost.remote_queues) | queues:
            self._sync_queue(vhost, queue_name)
        self._sync_bindings(vhost)

    # -- policies and parameters -----------------------------------------------------------

    def _sync_policy(self, kind: str, vhost: str, name: str) -> None:
        state, registry = self._state(), self._broker.registry
        records = state.policies(vhost) if kind == "policy" else state.operator_policies(vhost)
        record = next((r for r in records if r.name == name), None)
        if record is None:
            registry.clear_policy(kind, vhost, name)  # type: ignore[arg-type]
            return
        policy = Policy(
            vhost, name, record.pattern, record.definition, record.priority, record.apply_to
        )
        if registry.policy(kind, vhost, name) != policy:  # type: ignore[arg-type]
            registry.set_policy(kind, policy)  # type: ignore[arg-type]

    def _sync_parameter(self, component: str, vhost: str, name: str) -> None:
        registry = self._broker.registry
        record = next(
            (r for r in self._state().parameters(component, vhost) if r.name == name), None
        )
        if record is None:
            registry.clear_parameter(component, vhost, name)
            return
        parameter = Parameter(component, vhost, name, record.value)
        if registry.parameter(component, vhost, name) != parameter:
            registry.set_parameter(parameter)

    def _sync_global_parameter(self, name: str) -> None:
        record = self._state().global_parameter(name)
        table = self._broker.registry.global_parameters
        if record is None:
            table.pop(name, None)
        else:
            table[name] = record.value

    # -- exchanges and bindings ------------------------------------------------------------

    def _sync_exchange(self, vhost: VirtualHost, name: str) -> None:
        record = self._state().exchange(vhost.name, name)
        local = vhost.exchanges.get(name)
        if record is None:
            if local is not None and name and not name.startswith("amq."):
                vhost.remove_exchange(local)
            return
        decl = exchange_decl(record)
        if local is not None:
            if local.decl == decl or not name or name.startswith("amq."):
                return
            vhost.remove_exchange(local)  # replaced by another declaration while away
        vhost.create_exchange(name, decl)

    def _sync_binding(self, present: bool, record: BindingRecord) -> None:
        vhost = self._broker.vhosts.get(record.vhost)
        if vhost is None:
            return
        source = vhost.exchanges.get(record.source)
        if source is None:
            return
        binding = binding_of(record)
        if present:
            if vhost.has_destination(binding.destination_kind, binding.destination):
                source.add_binding(binding)
        else:
            source.remove_binding(binding)

    def _sync_bindings(self, vhost: VirtualHost) -> None:
        wanted = {binding_of(record) for record in self._state().bindings(vhost.name)}
        for exchange in list(vhost.exchanges.values()):
            for binding in list(exchange.bindings()):
                if binding not in wanted:
                    exchange.remove_binding(binding)
        for binding in wanted:
            source = vhost.exchanges.get(binding.source)
            if source is not None and vhost.has_destination(
                binding.destination_kind, binding.destination
            ):
                source.add_binding(binding)

    # -- queues ----------------------------------------------------------------------------

    def _sync_queue(self, vhost: VirtualHost, name: str) -> None:
        record = self._state().queue(vhost.name, name)
        local = vhost.queues.get(name)
        if record is None:
            vhost.remote_queues.pop(name, None)
            if local is not None:
                vhost.delete_queue(name)
            return
        if record.home_node != self._node:
            if local is not None:
                vhost.delete_queue(name)  # its home moved (the name was declared again elsewhere)
            vhost.remote_queues[name] = RemoteQueue(
                name, vhost.name, record.home_node, queue_decl(record), record.exclusive_owner
            )
            return
        vhost.remote_queues.pop(name, None)
        if local is not None:
            return
        owner_tag = record.exclusive_owner
        owner = None
        if owner_tag is not None:
            owner = next((s for s in open_sessions(self._broker) if s.owner_tag == owner_tag), None)
        gone = owner_tag is not None and (owner is None or owner.closed)
        if gone or (not record.durable and record.home_run != RUN_ID):
            # Its connection or the node's run that declared it is over: the queue goes, as in
            # RabbitMQ, where exclusive and non-durable queues do not outlive either.
            self._metadata.submit_eventually(delete_queue(vhost.name, name, owner_tag))
            return
        queue = vhost.add_queue(
            name,
            durable=record.durable,
            exclusive_owner=owner,
            auto_delete=record.auto_delete,
            arguments=decode_arguments(record.arguments),
            argument_types=dict(record.argument_types),
        )
        if owner is not None:
            owner.exclusive_queues.add(queue.name)
