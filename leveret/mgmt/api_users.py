"""`/api/users`, `/api/permissions`, `/api/topic-permissions` and `/api/whoami`."""

from __future__ import annotations

import re
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from ..broker import Permission
from . import metadata_writes
from .access import require_admin, require_vhost
from .account_bodies import HASHING_ALGORITHM, checked_user
from .context import (
    NO_CONTENT,
    Context,
    Reply,
    Route,
    created_or_updated,
    not_found_unless,
    ok,
    require_keys,
)
from .errors import ApiError, bad_request
from .listing import list_response

if TYPE_CHECKING:
    from ..auth import User


def user_json(user: User, limits: dict[str, int] | None = None) -> dict[str, Any]:
    return {
        "name": user.name,
        "password_hash": user.password_hash,
        "hashing_algorithm": HASHING_ALGORITHM,
        "tags": list(user.tags),
        "limits": dict(limits or {}),
    }


def permission_json(user: str, vhost: str, permission: Permission) -> dict[str, Any]:
    return {
        "user": user,
        "vhost": vhost,
        "configure": permission.configure,
        "write": permission.write,
        "read": permission.read,
    }


def _users(ctx: Context) -> list[dict[str, Any]]:
    limits = ctx.state.registry.user_limits
    return [user_json(user, limits.get(user.name)) for user in ctx.broker.users.values()]


def list_users(ctx: Context) -> Reply:
    require_admin(ctx.caller)
    return ok(list_response(_users(ctx), ctx.query, pageable=False, default_sort=("name",)))


def users_without_permissions(ctx: Context) -> Reply:
    require_admin(ctx.caller)
    with_permissions = {user for user, _ in ctx.broker.permissions}
    found = [u for u in _users(ctx) if u["name"] not in with_permissions]
    return ok(list_response(found, ctx.query, pageable=False, default_sort=("name",)))


def _user(ctx: Context) -> User:
    user = ctx.broker.users.get(ctx.param("user"))
    not_found_unless(user is not None)
    assert user is not None
    return user


def show_user(ctx: Context) -> Reply:
    require_admin(ctx.caller)
    user = _user(ctx)
    return ok(user_json(user, ctx.state.registry.user_limits.get(user.name)))


def put_user_handler(ctx: Context) -> Reply | Awaitable[Reply]:
    require_admin(ctx.caller)
    return metadata_writes.put_user(ctx, ctx.param("user"), checked_user(ctx.json_body()))


def delete_user_handler(ctx: Context) -> Reply | Awaitable[Reply]:
    require_admin(ctx.caller)
    return metadata_writes.delete_user(ctx, _user(ctx).name)


def bulk_delete(ctx: Context) -> Reply | Awaitable[Reply]:
    require_admin(ctx.caller)
    body = ctx.json_body()
    require_keys(body, "users")
    names = body["users"]
    if not isinstance(names, list):
        raise bad_request("users should be a list")
    if not all(isinstance(name, str) for name in names):
        raise bad_request("users should be a list of user names")
    for name in names:
        if name not in ctx.broker.users:
            raise ApiError(400, "bad_request", ["no_such_user", name])
    return metadata_writes.delete_users(ctx, names)


def user_permissions(ctx: Context) -> Reply:
    require_admin(ctx.caller)
    user = _user(ctx)
    found = [
        permission_json(u, v, p) for (u, v), p in ctx.broker.permissions.items() if u == user.name
    ]
    return ok(list_response(found, ctx.query, pageable=False, default_sort=("vhost",)))


def whoami(ctx: Context) -> Reply:
    return ok({"name": ctx.caller.name, "tags": sorted(ctx.caller.tags)})


# --- permissions -------------------------------------------------------------------------------


def list_permissions(ctx: Context) -> Reply:
    require_admin(ctx.caller)
    found = [permission_json(u, v, p) for (u, v), p in ctx.broker.permissions.items()]
    return ok(list_response(found, ctx.query, pageable=False, default_sort=("vhost", "user")))


def vhost_permissions(ctx: Context) -> Reply:
    require_admin(ctx.caller)
    vhost = ctx.param("vhost")
    require_vhost(ctx.broker, ctx.caller, vhost)
    found = [permission_json(u, v, p) for (u, v), p in ctx.broker.permissions.items() if v == vhost]
    return ok(list_response(found, ctx.query, pageable=False, default_sort=("user",)))


def _permission_key(ctx: Context) -> tuple[str, str]:
    return ctx.param("user"), ctx.param("vhost")


def show_permission(ctx: Context) -> Reply:
    require_admin(ctx.caller)
    user, vhost = _permission_key(ctx)
    permission = ctx.broker.permissions.get((user, vhost))
    not_found_unless(permission is not None)
    assert permission is not None
    return ok(permission_json(user, vhost, permission))


def _regex_problem(pattern: str) -> str | None:
    try:
        re.compile(pattern)
    except re.error as exc:
        return f"invalid_regexp: {pattern} ({exc.msg})"
    return None


def checked_permission(ctx: Context, user: str, vhost: str, body: dict[str, Any]) -> Permission:
    """The permission a PUT body (or definitions entry) grants, or the 400 RabbitMQ answers."""
    # As RabbitMQ: who and where are checked before what the body lacks.
    if user not in ctx.broker.users or vhost not in ctx.broker.vhosts:
        raise bad_request("vhost_or_user_not_found")
    require_keys(body, "configure", "write", "read")
    patterns = [body["configure"], body["write"], body["read"]]
    for pattern in patterns:
        if not isinstance(pattern, str):
            raise bad_request(f"invalid permission pattern {pattern!r}")
        problem = _regex_problem(pattern)
        if problem is not None:
            raise bad_request(problem)
    return Permission(*patterns)


def put_permission(ctx: Context) -> Reply | Awaitable[Reply]:
    require_admin(ctx.caller)
    user, vhost = _permission_key(ctx)
    permission = checked_permission(ctx, user, vhost, ctx.json_body())
    return metadata_writes.set_permissions(ctx, user, vhost, permission)


def delete_permission(ctx: Context) -> Reply | Awaitable[Reply]:
    require_admin(ctx.caller)
    user, vhost = _permission_key(ctx)
    return metadata_writes.clear_permissions(ctx, user, vhost)


# --- topic permissions (stored and listed; the topic exchange does not enforce them yet) ------


def _topic_json(user: str, vhost: str, exchange: str, patterns: tuple[str, str]) -> dict[str, Any]:
    return {
        "user": user,
        "vhost": vhost,
        "exchange": exchange,
        "write": patterns[0],
        "read": patterns[1],
    }


def _topics(
    ctx: Context, user: str | None = None, vhost: str | None = None
) -> list[dict[str, Any]]:
    return [
        _topic_json(u, v, e, patterns)
        for (u, v, e), patterns in sorted(ctx.state.registry.topic_permissions.items())
        if (user is None or u == user) and (vhost is None or v == vhost)
    ]


def list_topic_permissions(ctx: Context) -> Reply:
    require_admin(ctx.caller)
    return ok(_topics(ctx))


def user_topic_permissions(ctx: Context) -> Reply:
    require_admin(ctx.caller)
    return ok(_topics(ctx, user=_user(ctx).name))


def vhost_topic_permissions(ctx: Context) -> Reply:
    require_admin(ctx.caller)
    vhost = ctx.param("vhost")
    require_vhost(ctx.broker, ctx.caller, vhost)
    return ok(_topics(ctx, vhost=vhost))


def show_topic_permissions(ctx: Context) -> Reply:
    require_admin(ctx.caller)
    user, vhost = _permission_key(ctx)
    found = _topics(ctx, user=user, vhost=vhost)
    not_found_unless(bool(found))
    return ok(found)


def apply_topic_permission(ctx: Context, user: str, vhost: str, body: dict[str, Any]) -> bool:
    if user not in ctx.broker.users or vhost not in ctx.broker.vhosts:
        raise bad_request("vhost_or_user_not_found")
    require_keys(body, "exchange", "write", "read")
    key = (user, vhost, str(body["exchange"]))
    table = ctx.state.registry.topic_permissions
    created = key not in table
    table[key] = (str(body["write"]), str(body["read"]))
    return created


def put_topic_permission(ctx: Context) -> Reply:
    require_admin(ctx.caller)
    user, vhost = _permission_key(ctx)
    return created_or_updated(apply_topic_permission(ctx, user, vhost, ctx.json_body()))


def delete_topic_permissions(ctx: Context) -> Reply:
    require_admin(ctx.caller)
    user, vhost = _permission_key(ctx)
    table = ctx.state.registry.topic_permissions
    doomed = [key for key in table if key[0] == user and key[1] == vhost]
    not_found_unless(bool(doomed))
    for key in doomed:
        del table[key]
    return Reply(NO_CONTENT)


ROUTES: list[Route] = [
    Route("api/users", {"GET": list_users}),
    Route("api/users/without-permissions", {"GET": users_without_permissions}),
    Route("api/users/bulk-delete", {"POST": bulk_delete}),
    Route(
        "api/users/{user}",
        {"GET": show_user, "PUT": put_user_handler, "DELETE": delete_user_handler},
    ),
    Route("api/users/{user}/permissions", {"GET": user_permissions}),
    Route("api/users/{user}/topic-permissions", {"GET": user_topic_permissions}),
    Route("api/whoami", {"GET": whoami}),
    Route("api/permissions", {"GET": list_permissions}),
    Route(
        "api/permissions/{vhost}/{user}",
        {"GET": show_permission, "PUT": put_permission, "DELETE": delete_permission},
    ),
    Route("api/vhosts/{vhost}/permissions", {"GET": vhost_permissions}),
    Route("api/topic-permissions", {"GET": list_topic_permissions}),
    Route(
        "api/topic-permissions/{vhost}/{user}",
        {
            "GET": show_topic_permissions,
            "PUT": put_topic_permission,
            "DELETE": delete_topic_permissions,
        },
    ),
    Route("api/vhosts/{vhost}/topic-permissions", {"GET": vhost_topic_permissions}),
]
