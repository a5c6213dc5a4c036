"""`/api/vhost-limits` and `/api/user-limits`: RabbitMQ 3.10's limits, one name at a time."""

from __future__ import annotations

from typing import Any

from proto.metadata_schema import ClearUserLimit, SetParameter, SetUserLimits

from ..limits import (
    USER_LIMIT_NAMES,
    VHOST_LIMIT_NAMES,
    VHOST_LIMITS_COMPONENT,
    VHOST_LIMITS_NAME,
    LimitInvalid,
    checked_limits,
    vhost_limits_value,
)
from .access import login_vhosts, require_admin, require_vhost
from .context import NO_CONTENT, Context, Reply, Route, not_found_unless, ok, require_keys
from .errors import ApiError, bad_request
from .metadata_writes import decide

# --- vhost limits: the vhost-limits parameter of each vhost ------------------------------------


def _vhost_entries(ctx: Context, vhost: str | None) -> list[dict[str, Any]]:
    visible = set(login_vhosts(ctx.broker, ctx.caller))
    return [
        {"vhost": parameter.vhost, "value": parameter.value}
        for parameter in ctx.state.registry.parameters(VHOST_LIMITS_COMPONENT, vhost)
        if parameter.name == VHOST_LIMITS_NAME and parameter.vhost in visible
    ]


def list_vhost_limits(ctx: Context) -> Reply:
    return ok(_vhost_entries(ctx, None))


def show_vhost_limits(ctx: Context) -> Reply:
    vhost = ctx.param("vhost")
    require_vhost(ctx.broker, ctx.caller, vhost)
    # Unlike the full listing, RabbitMQ leaves out a vhost whose limits were all cleared.
    return ok([entry for entry in _vhost_entries(ctx, vhost) if entry["value"]])


def _current_vhost_limits(ctx: Context, vhost: str) -> dict[str, Any]:
    found = ctx.state.registry.parameter(VHOST_LIMITS_COMPONENT, vhost, VHOST_LIMITS_NAME)
    return vhost_limits_value(found.value if found is not None else None)


async def _store_vhost_limits(ctx: Context, vhost: str, limits: dict[str, Any]) -> None:
    # RabbitMQ keeps the parameter once every limit is cleared, as an empty list.
    value: Any = limits if limits else []
    command = SetParameter(
        component=VHOST_LIMITS_COMPONENT, vhost=vhost, name=VHOST_LIMITS_NAME, value=value
    )
    await decide(ctx, command, ApiError(404, "not_found", "vhost_not_found"))


async def put_vhost_limit(ctx: Context) -> Reply:
    require_admin(ctx.caller)
    vhost, name = ctx.param("vhost"), ctx.param("name")
    if vhost not in ctx.broker.vhosts:
        raise ApiError(404, "not_found", "vhost_not_found")
    body = ctx.json_body()
    require_keys(body, "value")
    try:
        checked_limits({name: body["value"]}, VHOST_LIMIT_NAMES, "limits")
    except LimitInvalid as invalid:
        raise bad_request(f"Validation failed\n\n{invalid}\n") from None
    limits = _current_vhost_limits(ctx, vhost)
    limits[name] = body["value"]
    await _store_vhost_limits(ctx, vhost, limits)
    return Reply(NO_CONTENT)


async def delete_vhost_limit(ctx: Context) -> Reply:
    require_admin(ctx.caller)
    vhost, name = ctx.param("vhost"), ctx.param("name")
    # RabbitMQ answers 500 for a vhost that does not exist; 404 says what is wrong.
    not_found_unless(vhost in ctx.broker.vhosts)
    limits = _current_vhost_limits(ctx, vhost)
    had_parameter = ctx.state.registry.parameter(VHOST_LIMITS_COMPONENT, vhost, VHOST_LIMITS_NAME)
    if had_parameter is not None:
        limits.pop(name, None)
        await _store_vhost_limits(ctx, vhost, limits)
    return Reply(NO_CONTENT)


# --- user limits: kept in each user's record ------------------------------------------------


def _user_entry(name: str, limits: dict[str, Any]) -> dict[str, Any]:
    return {"user": name, "value": dict(limits)}


def list_user_limits(ctx: Context) -> Reply:
    require_admin(ctx.caller)
    found = ctx.state.registry.user_limits
    return ok([_user_entry(name, found[name]) for name in sorted(found) if found[name]])


def show_user_limits(ctx: Context) -> Reply:
    require_admin(ctx.caller)
    name = ctx.param("user")
    not_found_unless(name in ctx.broker.users)
    limits = ctx.state.registry.user_limits.get(name)
    return ok([_user_entry(name, limits)] if limits else [])


async def put_user_limit(ctx: Context) -> Reply:
    require_admin(ctx.caller)
    user, name = ctx.param("user"), ctx.param("name")
    body = ctx.json_body()
    require_keys(body, "value")
    if user not in ctx.broker.users:
        raise ApiError(400, "bad_request", ["no_such_user", user])
    try:
        limits = checked_limits({name: body["value"]}, USER_LIMIT_NAMES, "user-limits")
    except LimitInvalid as invalid:
        raise bad_request(str(invalid)) from None
    outcome = await decide(ctx, SetUserLimits(name=user, limits=limits))
    if outcome["status"] == "not_found":  # deleted meanwhile, through another node
        raise ApiError(400, "bad_request", ["no_such_user", user])
    return Reply(NO_CONTENT)


async def delete_user_limit(ctx: Context) -> Reply:
    require_admin(ctx.caller)
    user, name = ctx.param("user"), ctx.param("name")
    # RabbitMQ answers 500 for a user that does not exist; 404 says what is wrong.
    not_found_unless(user in ctx.broker.users)
    outcome = await decide(ctx, ClearUserLimit(name=user, limit=name))
    not_found_unless(outcome["status"] != "not_found")
    return Reply(NO_CONTENT)


ROUTES: list[Route] = [
    Route("api/vhost-limits", {"GET": list_vhost_limits}),
    Route("api/vhost-limits/{vhost}", {"GET": show_vhost_limits}),
    Route(
        "api/vhost-limits/{vhost}/{name}", {"PUT": put_vhost_limit, "DELETE": delete_vhost_limit}
    ),
    Route("api/user-limits", {"GET": list_user_limits}),
    Route("api/user-limits/{user}", {"GET": show_user_limits}),
    Route("api/user-limits/{user}/{name}", {"PUT": put_user_limit, "DELETE": delete_user_limit}),
]
