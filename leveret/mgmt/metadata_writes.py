"""Management writes: checked here, decided by the metadata store, answered from its outcome.

Handlers parse and authorise a request, then hand the change to one of these coroutines, which
submits it as a command to the metadata store (`broker.metadata`) and answers from its outcome;
by then the store has applied the change to this node's model. A declaration that lost a race
to another node's is checked again against the winner, so the client gets the answer a single
node would give. `MetadataUnavailable` escapes to the server, which answers 503.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from proto.metadata_schema import (
    AddVhost,
    ClearGlobalParameter,
    ClearOperatorPolicy,
    ClearParameter,
    ClearPermissions,
    ClearPolicy,
    DeleteUser,
    DeleteVhost,
    PutUser,
    SetGlobalParameter,
    SetOperatorPolicy,
    SetParameter,
    SetPermissions,
    SetPolicy,
)

from .. import declare_rules as rules
from .. import metadata_commands as commands
from ..amqp.errors import AMQPError, precondition_failed
from ..amqp.fields import argument_types
from ..broker import Permission
from ..declare_rules import EXCHANGE_DECLARE, EXCHANGE_DELETE, QUEUE_DECLARE
from ..exchanges.base import Binding
from ..limits import check_queue_limit
from ..metadata import Command
from ..metadata import Reply as Outcome
from .broker_ops import new_password_hash
from .context import NO_CONTENT, Context, Reply, created_or_updated, not_found_unless
from .errors import ApiError, bad_request, from_amqp

if TYPE_CHECKING:
    from ..definitions_registry import Parameter, Policy, PolicyKind
    from ..exchanges.exchange import Exchange
    from ..vhost import VirtualHost
    from .account_bodies import UserChange, VhostChange

log = logging.getLogger(__name__)

# The "connection" declaring queues through the API: it owns no exclusive queue, so any
# exclusive owner differs from it (compared by identity).
_API_CONNECTION = object()


async def decide(ctx: Context, command: Command, refused: ApiError | None = None) -> Outcome:
    """The store's outcome of `command`; an "error" outcome becomes `refused` (or a 400).

    The checks made before submitting refuse what the store would; an error is left for races
    with other nodes (a vhost or user deleted meanwhile).
    """
    outcome = await ctx.broker.metadata.submit(command)
    if outcome.get("status") == "error":
        log.warning("the cluster refused %s: %s", command.op, outcome.get("reason"))
        raise refused if refused is not None else bad_request(str(outcome.get("reason")))
    return outcome


@contextmanager
def amqp_refusals() -> Iterator[None]:
    """Answer a declaration check's AMQP error as RabbitMQ's management API does."""
    try:
        yield
    except AMQPError as error:
        raise from_amqp(error) from None


def _deleted_or_404(outcome: Outcome) -> Reply:
    not_found_unless(outcome["status"] != "not_found")
    return Reply(NO_CONTENT)


# --- vhosts, users, permissions ------------------------------------------------------------------


async def put_vhost(ctx: Context, name: str, change: VhostChange) -> Reply:
    created = False
    if name not in ctx.broker.vhosts:
        command = AddVhost(
            name=name,
            description=change.description or "",
            tags=tuple(change.tags or ()),
            default_queue_type=change.default_queue_type,
        )
        created = (await decide(ctx, command))["status"] == "created"
        if created:
            # As RabbitMQ does, whoever creates a vhost may use it at once.
            await decide(ctx, permissions_command(ctx.caller.name, name, Permission()))
    # The store has no command that changes an existing vhost's description or tags, and
    # tracing is this node's business: this node keeps what the body asks for.
    metadata = ctx.state.registry.metadata(name)
    if change.description is not None:
        metadata.description = change.description
    if change.tags is not None:
        metadata.tags = change.tags
    if change.tracing is not None:
        metadata.tracing = change.tracing
    return created_or_updated(created)


async def delete_vhost(ctx: Context, name: str) -> Reply:
    return _deleted_or_404(await decide(ctx, DeleteVhost(name=name)))


async def put_user(ctx: Context, name: str, change: UserChange) -> Reply:
    existing = ctx.broker.users.get(name)
    command = PutUser(
        name=name,
        password_hash=new_password_hash(existing, change.password, change.password_hash),
        tags=tuple(change.tags),
    )
    return created_or_updated((await decide(ctx, command))["status"] == "created")


async def delete_user(ctx: Context, name: str) -> Reply:
    reply = _deleted_or_404(await decide(ctx, DeleteUser(name=name)))
    ctx.state.registry.forget_user(name)
    return reply


async def delete_users(ctx: Context, names: list[str]) -> Reply:
    """Bulk delete: users another node deleted meanwhile count as deleted."""
    for name in names:
        await decide(ctx, DeleteUser(name=name))
        ctx.state.registry.forget_user(name)
    return Reply(NO_CONTENT)


def permissions_command(user: str, vhost: str, permission: Permission) -> SetPermissions:
    return SetPermissions(
        user=user,
        vhost=vhost,
        configure=permission.configure,
        write=permission.write,
        read=permission.read,
    )


async def set_permissions(ctx: Context, user: str, vhost: str, permission: Permission) -> Reply:
    created = (user, vhost) not in ctx.broker.permissions
    refused = bad_request("vhost_or_user_not_found")
    await decide(ctx, permissions_command(user, vhost, permission), refused)
    return created_or_updated(created)


async def clear_permissions(ctx: Context, user: str, vhost: str) -> Reply:
    command = ClearPermissions(user=user, vhost=vhost)
    return _deleted_or_404(await decide(ctx, command))


# --- policies and parameters ---------------------------------------------------------------------


def _vhost_not_found() -> ApiError:
    return ApiError(404, "not_found", "vhost_not_found")


def policy_command(kind: PolicyKind, policy: Policy) -> SetPolicy | SetOperatorPolicy:
    command = SetPolicy if kind == "policy" else SetOperatorPolicy
    return command(
        vhost=policy.vhost,
        name=policy.name,
        pattern=policy.pattern,
        apply_to=policy.apply_to,
        definition=policy.definition,
        priority=policy.priority,
    )


async def set_policy(ctx: Context, kind: PolicyKind, policy: Policy) -> Reply:
    outcome = await decide(ctx, policy_command(kind, policy), _vhost_not_found())
    return created_or_updated(outcome["status"] == "created")


async def clear_policy(ctx: Context, kind: PolicyKind, vhost: str, name: str) -> Reply:
    clear = ClearPolicy if kind == "policy" else ClearOperatorPolicy
    command = clear(vhost=vhost, name=name)
    return _deleted_or_404(await decide(ctx, command))


def parameter_command(parameter: Parameter) -> SetParameter:
    return SetParameter(
        component=parameter.component,
        vhost=parameter.vhost,
        name=parameter.name,
        value=parameter.value,
    )


async def set_parameter(ctx: Context, parameter: Parameter) -> Reply:
    outcome = await decide(ctx, parameter_command(parameter), _vhost_not_found())
    return created_or_updated(outcome["status"] == "created")


async def clear_parameter(ctx: Context, component: str, vhost: str, name: str) -> Reply:
    command = ClearParameter(component=component, vhost=vhost, name=name)
    return _deleted_or_404(await decide(ctx, command))


async def set_global_parameter(ctx: Context, name: str, value: Any) -> Reply:
    outcome = await decide(ctx, SetGlobalParameter(name=name, value=value))
    return created_or_updated(outcome["status"] == "created")


async def clear_global_parameter(ctx: Context, name: str) -> Reply:
    return _deleted_or_404(await decide(ctx, ClearGlobalParameter(name=name)))


# --- exchanges, queues, bindings -----------------------------------------------------------------


async def declare_exchange(
    ctx: Context,
    vhost: VirtualHost,
    name: str,
    type_name: str,
    *,
    durable: bool,
    auto_delete: bool,
    internal: bool,
    arguments: dict[str, Any],
) -> Reply:
    name = rules.strip_cr_lf(name)
    with amqp_refusals():
        requested = vhost.check_exchange_declare(
            name,
            type_name,
            passive=False,
            durable=durable,
            auto_delete=auto_delete,
            internal=internal,
            arguments=arguments,
            method=EXCHANGE_DECLARE,
        )
    if requested is None:
        return created_or_updated(False)
    outcome = await decide(ctx, commands.declare_exchange(vhost.name, name, requested))
    if outcome["status"] != "created":
        # Another node's declaration won: this one must be equivalent to it.
        existing = commands.exchange_decl(commands.replied_exchange(outcome))
        with amqp_refusals():
            rules.check_exchange_equivalence(name, existing, requested, vhost.name)
        return created_or_updated(False)
    ctx.state.actors[("exchange", vhost.name, name)] = ctx.caller.name
    return created_or_updated(True)


async def delete_exchange(
    ctx: Context, vhost: VirtualHost, exchange: Exchange, if_unused: bool
) -> Reply:
    name = exchange.name
    with amqp_refusals():
        rules.check_exchange_delete(
            name,
            exists=True,
            if_unused=if_unused,
            has_bindings_as_source=exchange.has_bindings(),
            vhost=vhost.name,
        )
    outcome = await decide(ctx, commands.delete_exchange(vhost.name, name, if_unused))
    if outcome["status"] == "in_use":
        in_use = f"{rules.describe('exchange', name, vhost.name)} in use"
        raise from_amqp(precondition_failed(in_use, EXCHANGE_DELETE))
    reply = _deleted_or_404(outcome)
    ctx.state.actors.pop(("exchange", vhost.name, name), None)
    return reply


def queue_declaration(
    durable: bool, auto_delete: bool, arguments: dict[str, Any]
) -> rules.QueueDecl:
    """A queue declared through the API: never exclusive."""
    return rules.QueueDecl(durable, False, auto_delete, arguments, argument_types(arguments))


def check_queue_declare(
    vhost: VirtualHost,
    name: str,
    requested: rules.QueueDecl,
    existing: rules.QueueDecl | None,
    owner: Any,
) -> bool:
    """Check an API declaration against `existing` as a single node does; True to create."""
    return rules.check_queue_declare(
        name,
        requested,
        passive=False,
        existing=existing,
        owner=owner,
        connection=_API_CONNECTION,
        vhost=vhost.name,
        method=QUEUE_DECLARE,
    )


async def declare_queue(
    ctx: Context,
    vhost: VirtualHost,
    name: str,
    *,
    durable: bool,
    auto_delete: bool,
    arguments: dict[str, Any],
) -> Reply:
    """Declare a queue whose home is this node (when it is new)."""
    name = rules.strip_cr_lf(name)
    requested = queue_declaration(durable, auto_delete, arguments)
    known = vhost.known_queue(name)
    with amqp_refusals():
        create = check_queue_declare(vhost, name, requested, *(known or (None, None)))
    if not create:
        queue = vhost.queues.get(name)
        if queue is not None:
            queue.touch()  # a redeclare renews an x-expires lease
        return created_or_updated(False)
    with amqp_refusals():
        check_queue_limit(ctx.broker.registry.vhost_limits.get(vhost.name), vhost, name, (0, 0))
    store = ctx.broker.metadata
    command = commands.declare_queue(vhost.name, name, requested.as_stored(), None, store.node_name)
    outcome = await decide(ctx, command)
    if outcome["status"] == "created":
        return created_or_updated(True)
    # Another node's declaration won: this one must be equivalent to it.
    record = commands.replied_queue(outcome)
    with amqp_refusals():
        check_queue_declare(
            vhost, name, requested, commands.queue_decl(record), record.exclusive_owner
        )
    return created_or_updated(False)


def _exclusive_owner_tag(vhost: VirtualHost, name: str) -> str | None:
    """The owner to name when deleting queue `name`: the API may delete exclusive queues."""
    queue = vhost.queues.get(name)
    if queue is not None:
        owner = queue.exclusive_owner
        return None if owner is None else getattr(owner, "owner_tag", None)
    remote = vhost.remote_queues.get(name)
    return remote.exclusive_owner if remote is not None else None


async def delete_queue(ctx: Context, vhost: VirtualHost, name: str) -> Reply:
    """Delete a queue here or on another node (its if-unused and if-empty are checked already,
    where they can be)."""
    owner = _exclusive_owner_tag(vhost, name)
    outcome = await decide(ctx, commands.delete_queue(vhost.name, name, owner))
    if outcome["status"] == "locked":
        # The queue changed hands between the look here and the decision.
        raise from_amqp(rules.exclusive_locked(name, vhost.name))
    return _deleted_or_404(outcome)


async def bind(
    ctx: Context,
    vhost: VirtualHost,
    source: str,
    destination: str,
    kind: str,
    routing_key: str,
    arguments: dict[str, Any],
    method: tuple[int, int],
    created: Reply,
) -> Reply:
    """Add a binding; `created` is the reply (a binding that exists already is created too)."""

    def check_ends(source_exists: bool, destination_exists: bool) -> None:
        with amqp_refusals():
            rules.check_bind(
                source,
                destination,
                kind,
                source_exists=source_exists,
                destination_exists=destination_exists,
                vhost=vhost.name,
                method=method,
            )

    check_ends(source in vhost.exchanges, vhost.has_destination(kind, destination))
    exchange = vhost.exchanges[source]
    binding = Binding.of(source, destination, kind, routing_key, arguments)  # type: ignore[arg-type]
    with amqp_refusals():
        exchange.validate_binding(binding, method)
    if exchange.has_binding(binding):
        return created
    outcome = await decide(ctx, commands.bind(vhost.name, binding))
    if outcome["status"] == "not_found":
        # An end was deleted meanwhile, by another node.
        missing = outcome.get("missing")
        check_ends(missing != "source", missing != "destination")
    return created


async def unbind(
    ctx: Context, vhost: VirtualHost, binding: Binding, method: tuple[int, int]
) -> Reply:
    """Remove a binding; one removed meanwhile is removed all the same."""
    with amqp_refusals():
        rules.check_unbind(binding.source, binding.destination, binding.destination_kind, method)
    await decide(ctx, commands.unbind(vhost.name, binding))
    return Reply(NO_CONTENT)
