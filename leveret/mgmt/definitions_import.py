"""Definitions import: each entry checked here, then decided by the metadata store, in order."""

from __future__ import annotations

from typing import Any

from proto.metadata_schema import AddVhost, SetGlobalParameter, SetUserLimits

from .. import declare_rules as rules
from .. import metadata_commands as commands
from ..amqp.errors import AMQPError
from ..declare_rules import EXCHANGE_BIND, EXCHANGE_DECLARE, QUEUE_BIND
from ..definitions_registry import PolicyKind
from ..exchanges.base import Binding
from ..limits import USER_LIMIT_NAMES, LimitInvalid, checked_limits
from . import metadata_writes
from .account_bodies import checked_user
from .api_policies import checked_parameter
from .api_users import apply_topic_permission, checked_permission
from .context import NO_CONTENT, Context, Reply
from .definitions_input import items, key_missing, vhost_description_and_tags, vhost_of
from .errors import ApiError, bad_request
from .policy_validation import PolicyInvalid, parse_policy


async def import_definitions(
    ctx: Context, document: dict[str, Any], forced_vhost: str | None
) -> Reply:
    """Objects that already exist are left as they are, and bindings whose ends are missing
    are skipped, as RabbitMQ does."""
    try:
        if forced_vhost is None:
            await _import_access(ctx, document)
        await _import_policies(ctx, document, forced_vhost)
        await _import_queues(ctx, document, forced_vhost)
        await _import_exchanges(ctx, document, forced_vhost)
        await _import_bindings(ctx, document, forced_vhost)
    except KeyError as missing:
        raise key_missing(missing) from None
    return Reply(NO_CONTENT)


def _no_such_vhost(vhost: str) -> ApiError:
    return ApiError(400, "bad_request", ["no_such_vhost", vhost])


async def _import_access(ctx: Context, document: dict[str, Any]) -> None:
    for entry in items(document, "users"):
        await metadata_writes.put_user(ctx, str(entry["name"]), checked_user(entry))
        limits = entry.get("limits")
        if isinstance(limits, dict) and limits:
            try:
                checked = checked_limits(limits, USER_LIMIT_NAMES, "user-limits")
            except LimitInvalid as invalid:
                raise bad_request(str(invalid)) from None
            await metadata_writes.decide(
                ctx, SetUserLimits(name=str(entry["name"]), limits=checked)
            )
    for entry in items(document, "vhosts"):
        name = str(entry["name"])
        description, tags = vhost_description_and_tags(entry)
        if name not in ctx.broker.vhosts:
            command = AddVhost(name=name, description=description or "", tags=tuple(tags or ()))
            await metadata_writes.decide(ctx, command)
        # An existing vhost's description and tags have no command in the store: kept here.
        metadata = ctx.state.registry.metadata(name)
        if description is not None:
            metadata.description = description
        if tags is not None:
            metadata.tags = tags
    for entry in items(document, "permissions"):
        user, vhost = str(entry["user"]), str(entry["vhost"])
        permission = checked_permission(ctx, user, vhost, entry)
        refused = bad_request("vhost_or_user_not_found")
        await metadata_writes.decide(
            ctx, metadata_writes.permissions_command(user, vhost, permission), refused
        )
    for topic in items(document, "topic_permissions"):
        # Topic permissions are kept by each node (the store has no command for them yet).
        apply_topic_permission(ctx, str(topic["user"]), str(topic["vhost"]), topic)
    for parameter in items(document, "global_parameters"):
        setting = SetGlobalParameter(name=str(parameter["name"]), value=parameter.get("value"))
        await metadata_writes.decide(ctx, setting)


async def _import_policies(
    ctx: Context, document: dict[str, Any], forced_vhost: str | None
) -> None:
    for entry in items(document, "parameters"):
        vhost = vhost_of(ctx, entry, forced_vhost)
        parameter = checked_parameter(
            ctx, str(entry["component"]), vhost, str(entry["name"]), entry
        )
        await metadata_writes.decide(
            ctx, metadata_writes.parameter_command(parameter), _no_such_vhost(vhost)
        )
    kinds: tuple[tuple[PolicyKind, str], ...] = (
        ("policy", "policies"),
        ("operator_policy", "operator_policies"),
    )
    for kind, key in kinds:
        for item in items(document, key):
            vhost = vhost_of(ctx, item, forced_vhost)
            name = str(item.get("name", ""))
            try:
                policy = parse_policy(kind, vhost, name, item)
            except PolicyInvalid as invalid:
                raise bad_request(f"{invalid} ({vhost}/{name})") from None
            command = metadata_writes.policy_command(kind, policy)
            await metadata_writes.decide(ctx, command, _no_such_vhost(vhost))


async def _import_queues(ctx: Context, document: dict[str, Any], forced_vhost: str | None) -> None:
    store = ctx.broker.metadata
    for entry in items(document, "queues"):
        vhost = ctx.broker.vhosts[vhost_of(ctx, entry, forced_vhost)]
        name = str(entry["name"])
        if vhost.known_queue(name) is not None:
            continue
        requested = metadata_writes.queue_declaration(
            entry.get("durable", True) is True,
            entry.get("auto_delete", False) is True,
            dict(entry.get("arguments") or {}),
        )
        try:
            metadata_writes.check_queue_declare(vhost, name, requested, None, None)
        except AMQPError as error:
            raise bad_request(error.text) from None
        command = commands.declare_queue(
            vhost.name, name, requested.as_stored(), None, store.node_name
        )
        # A queue another node declared meanwhile is left as it is, like any existing one.
        await metadata_writes.decide(ctx, command, _no_such_vhost(vhost.name))


async def _import_exchanges(
    ctx: Context, document: dict[str, Any], forced_vhost: str | None
) -> None:
    for entry in items(document, "exchanges"):
        vhost = ctx.broker.vhosts[vhost_of(ctx, entry, forced_vhost)]
        name = str(entry["name"])
        if name in vhost.exchanges:
            continue
        try:
            requested = vhost.check_exchange_declare(
                name,
                str(entry.get("type", "direct")),
                passive=False,
                durable=entry.get("durable", True) is True,
                auto_delete=entry.get("auto_delete", False) is True,
                internal=entry.get("internal", False) is True,
                arguments=dict(entry.get("arguments") or {}),
                method=EXCHANGE_DECLARE,
            )
        except AMQPError as error:
            raise bad_request(error.text) from None
        if requested is None:
            continue
        command = commands.declare_exchange(vhost.name, name, requested)
        await metadata_writes.decide(ctx, command, _no_such_vhost(vhost.name))


async def _import_bindings(
    ctx: Context, document: dict[str, Any], forced_vhost: str | None
) -> None:
    for entry in items(document, "bindings"):
        vhost = ctx.broker.vhosts[vhost_of(ctx, entry, forced_vhost)]
        kind = str(entry.get("destination_type", "queue"))
        source, destination = str(entry["source"]), str(entry["destination"])
        if not source or source not in vhost.exchanges:
            continue
        if not vhost.has_destination(kind, destination):
            continue
        method = QUEUE_BIND if kind == "queue" else EXCHANGE_BIND
        routing_key = str(entry.get("routing_key", ""))
        arguments = dict(entry.get("arguments") or {})
        binding = Binding.of(source, destination, kind, routing_key, arguments)  # type: ignore[arg-type]
        exchange = vhost.exchanges[source]
        try:
            rules.check_bind(
                source,
                destination,
                kind,
                source_exists=True,
                destination_exists=True,
                vhost=vhost.name,
                method=method,
            )
            exchange.validate_binding(binding, method)
        except AMQPError as error:
            raise bad_request(error.text) from None
        if exchange.has_binding(binding):
            continue
        # An end deleted meanwhile by another node makes "not_found": skipped, as above.
        await metadata_writes.decide(ctx, commands.bind(vhost.name, binding))
