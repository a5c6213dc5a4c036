"""`/api/connections`, `/api/channels`, `/api/consumers`: client activity; closing connections.

On a clustered node the listings cover the whole cluster, as RabbitMQ's do: this node's own,
and what the other nodes list (see cluster_clients)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any

from ..session import open_sessions
from .access import login_vhosts, require_vhost, sees_user_objects
from .cluster_clients import clients_elsewhere, close_elsewhere, other_nodes
from .connection_view import (
    channel_json,
    channel_name,
    connection_json,
    connection_name,
    consumer_channels,
    consumer_json,
    with_channel_details,
)
from .context import NO_CONTENT, Context, Reply, Route, not_found_unless, ok
from .errors import not_authorised
from .listing import list_response, select_columns
from .node_clients import node_sessions, queue_consumers

if TYPE_CHECKING:
    from ..channel import Channel
    from ..session import Session

CLOSED_BY_MANAGEMENT = "Closed via management plugin"


def _sessions(ctx: Context, vhost: str | None = None) -> Iterator[Session]:
    ctx.state.observe()
    for session in list(open_sessions(ctx.broker)):
        if session.closed or session.vhost is None:
            continue
        if vhost is not None and session.vhost.name != vhost:
            continue
        if sees_user_objects(ctx.caller, session.username):
            yield session


def _channels(ctx: Context, vhost: str | None = None) -> Iterator[Channel]:
    for session in _sessions(ctx, vhost):
        yield from list(session.channels.values())


def _node(ctx: Context) -> str:
    return ctx.broker.config.node_name


# What the other nodes listed, by kind (see cluster_clients).
Listed = dict[str, list[dict[str, Any]]]


def _listing(
    ctx: Context,
    kind: str,
    local: list[dict[str, Any]],
    visible: Callable[[dict[str, Any]], bool],
    complete: Callable[[Context, list[dict[str, Any]], Listed], list[dict[str, Any]]] | None = None,
    **listing: Any,
) -> Reply | Awaitable[Reply]:
    """`local`, with what the other nodes list of `kind` (see cluster_clients), `complete`d
    with the rest of what they said, and what the caller may see of it: on a node alone, at
    once."""
    if not other_nodes(ctx.broker):
        return ok(list_response(local, ctx.query, **listing))

    async def merged() -> Reply:
        elsewhere = await clients_elsewhere(ctx.broker)
        items = local + elsewhere[kind]
        if complete is not None:
            items = complete(ctx, items, elsewhere)
        return ok(list_response([item for item in items if visible(item)], ctx.query, **listing))

    return merged()


def _with_channels(
    ctx: Context, consumers: list[dict[str, Any]], elsewhere: Listed
) -> list[dict[str, Any]]:
    """`consumers` with the channel details of those whose queue's home node is not their
    client's (the client's node knows them: this one, or one of the others)."""
    ctx.state.observe()
    here = [channel for s in node_sessions(ctx.broker) for channel in list(s.channels.values())]
    channels = consumer_channels(here, ctx.state, _node(ctx)) + elsewhere["consumer_channels"]
    return with_channel_details(consumers, channels)


def _owned(ctx: Context, vhost: str | None = None) -> Callable[[dict[str, Any]], bool]:
    """Whether the caller sees another node's connection or channel (in `vhost`, if given)."""
    return lambda item: (
        (vhost is None or item.get("vhost") == vhost)
        and sees_user_objects(ctx.caller, item.get("user", ""))
    )


def list_connections(ctx: Context) -> Reply | Awaitable[Reply]:
    items = [connection_json(s, ctx.state, _node(ctx)) for s in _sessions(ctx)]
    return _listing(ctx, "connections", items, _owned(ctx), default_sort=("name",))


def list_vhost_connections(ctx: Context) -> Reply | Awaitable[Reply]:
    vhost = ctx.param("vhost")
    require_vhost(ctx.broker, ctx.caller, vhost)
    items = [connection_json(s, ctx.state, _node(ctx)) for s in _sessions(ctx, vhost)]
    return _listing(ctx, "connections", items, _owned(ctx, vhost), default_sort=("name",))


def _local_connection(ctx: Context) -> Session | None:
    wanted = ctx.param("name")
    ctx.state.observe()
    for session in list(open_sessions(ctx.broker)):
        if (
            session.vhost is not None
            and not session.closed
            and connection_name(session, ctx.state) == wanted
        ):
            if not sees_user_objects(ctx.caller, session.username):
                raise not_authorised("User not authorised to access object")
            return session
    return None


async def _elsewhere(ctx: Context, kind: str) -> tuple[Any, dict[str, list[dict[str, Any]]]]:
    """The item of `kind` another node lists under the requested name (404 if none), with
    everything the other nodes listed (asked once)."""
    wanted = ctx.param("name")
    listed = await clients_elsewhere(ctx.broker)
    for item in listed[kind]:
        if item.get("name") == wanted:
            if not sees_user_objects(ctx.caller, item.get("user", "")):
                raise not_authorised("User not authorised to access object")
            return item, listed
    not_found_unless(False)
    raise AssertionError("unreachable")


def show_connection(ctx: Context) -> Reply | Awaitable[Reply]:
    session = _local_connection(ctx)
    if session is not None:
        shown = connection_json(session, ctx.state, _node(ctx))
        return ok(select_columns(shown, ctx.query.get("columns")))

    async def elsewhere() -> Reply:
        shown, _ = await _elsewhere(ctx, "connections")
        return ok(select_columns(shown, ctx.query.get("columns")))

    return elsewhere()


def close_connection(ctx: Context) -> Reply | Awaitable[Reply]:
    reason = _reason(ctx.request.header("x-reason")) or CLOSED_BY_MANAGEMENT
    session = _local_connection(ctx)
    if session is not None:
        session.close_forced(reason)
        return Reply(NO_CONTENT)

    async def elsewhere() -> Reply:
        shown, _ = await _elsewhere(ctx, "connections")
        closed = await close_elsewhere(ctx.broker, shown["node"], shown["name"], reason)
        not_found_unless(closed)  # it closed meanwhile
        return Reply(NO_CONTENT)

    return elsewhere()


def _reason(header: str) -> str:
    """X-Reason as the client meant it: header bytes arrive as latin-1, clients send UTF-8."""
    try:
        return header.encode("latin-1").decode("utf-8")
    except UnicodeError:
        return header


def connection_channels(ctx: Context) -> Reply | Awaitable[Reply]:
    session = _local_connection(ctx)
    if session is not None:
        items = [channel_json(c, ctx.state, _node(ctx)) for c in list(session.channels.values())]
        return ok(list_response(items, ctx.query, default_sort=("name",)))

    async def elsewhere() -> Reply:
        shown, listed = await _elsewhere(ctx, "connections")
        items = [
            channel
            for channel in listed["channels"]
            if channel.get("connection_details", {}).get("name") == shown["name"]
        ]
        return ok(list_response(items, ctx.query, default_sort=("name",)))

    return elsewhere()


def list_channels(ctx: Context) -> Reply | Awaitable[Reply]:
    items = [channel_json(c, ctx.state, _node(ctx)) for c in _channels(ctx)]
    return _listing(ctx, "channels", items, _owned(ctx), default_sort=("name",))


def list_vhost_channels(ctx: Context) -> Reply | Awaitable[Reply]:
    vhost = ctx.param("vhost")
    require_vhost(ctx.broker, ctx.caller, vhost)
    items = [channel_json(c, ctx.state, _node(ctx)) for c in _channels(ctx, vhost)]
    return _listing(ctx, "channels", items, _owned(ctx, vhost), default_sort=("name",))


def show_channel(ctx: Context) -> Reply | Awaitable[Reply]:
    wanted = ctx.param("name")
    ctx.state.observe()
    for session in list(open_sessions(ctx.broker)):
        if session.vhost is None or session.closed:
            continue
        for channel in list(session.channels.values()):
            if channel_name(channel, ctx.state) == wanted:
                if not sees_user_objects(ctx.caller, session.username):
                    raise not_authorised("User not authorised to access object")
                shown = channel_json(channel, ctx.state, _node(ctx))
                shown["consumer_details"] = [
                    consumer_json(c, ctx.state, _node(ctx)) for c in channel.consumers.values()
                ]
                shown["deliveries"] = []
                shown["publishes"] = []
                return ok(select_columns(shown, ctx.query.get("columns")))

    async def elsewhere() -> Reply:
        found, listed = await _elsewhere(ctx, "channels")
        shown = dict(found)
        # The consumers on this channel, whichever node their queues are homed on.
        here = queue_consumers(ctx.broker, ctx.state)
        consumers = _with_channels(ctx, here + listed["consumers"], listed)
        shown["consumer_details"] = [
            consumer for consumer in consumers if consumer["channel_details"].get("name") == wanted
        ]
        shown["deliveries"] = []
        shown["publishes"] = []
        return ok(select_columns(shown, ctx.query.get("columns")))

    return elsewhere()


def _consumers(ctx: Context, vhosts: list[str]) -> Reply | Awaitable[Reply]:
    items = []
    for name in vhosts:
        for queue in ctx.broker.vhosts[name].queues.values():
            for consumer in queue.consumers:
                session = getattr(consumer.sink, "session", None)
                username = getattr(session, "username", None)
                if username is not None and not sees_user_objects(ctx.caller, username):
                    continue
                items.append(consumer_json(consumer, ctx.state, _node(ctx)))

    def visible(item: dict[str, Any]) -> bool:
        user = item.get("channel_details", {}).get("user")
        in_vhosts = item.get("queue", {}).get("vhost") in vhosts
        return in_vhosts and (user is None or sees_user_objects(ctx.caller, user))

    return _listing(
        ctx, "consumers", items, visible, _with_channels, pageable=False, default_sort=()
    )


def list_consumers(ctx: Context) -> Reply | Awaitable[Reply]:
    vhosts = (
        list(ctx.broker.vhosts) if ctx.caller.is_monitor else login_vhosts(ctx.broker, ctx.caller)
    )
    return _consumers(ctx, vhosts)


def list_vhost_consumers(ctx: Context) -> Reply | Awaitable[Reply]:
    vhost = ctx.param("vhost")
    require_vhost(ctx.broker, ctx.caller, vhost)
    return _consumers(ctx, [vhost])


ROUTES = [
    Route("api/connections", {"GET": list_connections}),
    Route("api/connections/{name}", {"GET": show_connection, "DELETE": close_connection}),
    Route("api/connections/{name}/channels", {"GET": connection_channels}),
    Route("api/vhosts/{vhost}/connections", {"GET": list_vhost_connections}),
    Route("api/channels", {"GET": list_channels}),
    Route("api/channels/{name}", {"GET": show_channel}),
    Route("api/vhosts/{vhost}/channels", {"GET": list_vhost_channels}),
    Route("api/consumers", {"GET": list_consumers}),
    Route("api/consumers/{vhost}", {"GET": list_vhost_consumers}),
]
