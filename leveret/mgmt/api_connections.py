"""`/api/connections`, `/api/channels`, `/api/consumers`: client activity; closing connections."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..session import open_sessions
from .access import login_vhosts, require_vhost, sees_user_objects
from .connection_view import (
    channel_json,
    channel_name,
    connection_json,
    connection_name,
    consumer_json,
)
from .context import NO_CONTENT, Context, Reply, Route, not_found_unless, ok
from .errors import not_authorised
from .listing import list_response, select_columns

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


def list_connections(ctx: Context) -> Reply:
    items = [connection_json(s, ctx.state, _node(ctx)) for s in _sessions(ctx)]
    return ok(list_response(items, ctx.query, default_sort=("name",)))


def list_vhost_connections(ctx: Context) -> Reply:
    vhost = ctx.param("vhost")
    require_vhost(ctx.broker, ctx.caller, vhost)
    items = [connection_json(s, ctx.state, _node(ctx)) for s in _sessions(ctx, vhost)]
    return ok(list_response(items, ctx.query, default_sort=("name",)))


def _connection(ctx: Context) -> Session:
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
    not_found_unless(False)
    raise AssertionError("unreachable")


def show_connection(ctx: Context) -> Reply:
    shown = connection_json(_connection(ctx), ctx.state, _node(ctx))
    return ok(select_columns(shown, ctx.query.get("columns")))


def close_connection(ctx: Context) -> Reply:
    session = _connection(ctx)
    session.close_forced(_reason(ctx.request.header("x-reason")) or CLOSED_BY_MANAGEMENT)
    return Reply(NO_CONTENT)


def _reason(header: str) -> str:
    """X-Reason as the client meant it: header bytes arrive as latin-1, clients send UTF-8."""
    try:
        return header.encode("latin-1").decode("utf-8")
    except UnicodeError:
        return header


def connection_channels(ctx: Context) -> Reply:
    session = _connection(ctx)
    items = [channel_json(c, ctx.state, _node(ctx)) for c in list(session.channels.values())]
    return ok(list_response(items, ctx.query, default_sort=("name",)))


def list_channels(ctx: Context) -> Reply:
    items = [channel_json(c, ctx.state, _node(ctx)) for c in _channels(ctx)]
    return ok(list_response(items, ctx.query, default_sort=("name",)))


def list_vhost_channels(ctx: Context) -> Reply:
    vhost = ctx.param("vhost")
    require_vhost(ctx.broker, ctx.caller, vhost)
    items = [channel_json(c, ctx.state, _node(ctx)) for c in _channels(ctx, vhost)]
    return ok(list_response(items, ctx.query, default_sort=("name",)))


def show_channel(ctx: Context) -> Reply:
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
    not_found_unless(False)
    raise AssertionError("unreachable")


def _consumers(ctx: Context, vhosts: list[str]) -> Reply:
    items = []
    for name in vhosts:
        for queue in ctx.broker.vhosts[name].queues.values():
            for consumer in queue.consumers:
                session = getattr(consumer.sink, "session", None)
                username = getattr(session, "username", None)
                if username is not None and not sees_user_objects(ctx.caller, username):
                    continue
                items.append(consumer_json(consumer, ctx.state, _node(ctx)))
    return ok(list_response(items, ctx.query, pageable=False, default_sort=()))


def list_consumers(ctx: Context) -> Reply:
    vhosts = (
        list(ctx.broker.vhosts) if ctx.caller.is_monitor else login_vhosts(ctx.broker, ctx.caller)
    )
    return _consumers(ctx, vhosts)


def list_vhost_consumers(ctx: Context) -> Reply:
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
