"""`/api/policies`, `/api/operator-policies`, `/api/parameters` and `/api/global-parameters`."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from ..definitions_registry import Parameter, Policy, PolicyKind
from . import metadata_writes
from .access import login_vhosts, require_admin, require_policymaker, require_vhost
from .context import (
    Context,
    Reply,
    Route,
    not_found_unless,
    ok,
    require_keys,
)
from .errors import ApiError, bad_request
from .listing import list_response
from .policy_validation import PolicyInvalid, parse_policy

_VALIDATION_FAILED = "Validation failed\n\n{}\n"


def _policy_routes(kind: PolicyKind, prefix: str) -> list[Route]:
    # Policymakers may read operator policies; only administrators change them.
    admin_only = kind == "operator_policy"

    def authorise_read(ctx: Context) -> None:
        if admin_only:
            require_policymaker(ctx.caller)

    def authorise_write(ctx: Context) -> None:
        if admin_only:
            require_admin(ctx.caller)
        else:
            require_policymaker(ctx.caller)

    def listed(ctx: Context, policies: list[Policy]) -> Reply:
        return ok(list_response([p.as_json() for p in policies], ctx.query, pageable=False))

    def list_all(ctx: Context) -> Reply:
        authorise_read(ctx)
        vhosts = set(login_vhosts(ctx.broker, ctx.caller))
        return listed(ctx, [p for p in ctx.state.registry.policies(kind) if p.vhost in vhosts])

    def list_vhost(ctx: Context) -> Reply:
        authorise_read(ctx)
        vhost = ctx.param("vhost")
        require_vhost(ctx.broker, ctx.caller, vhost)
        return listed(ctx, ctx.state.registry.policies(kind, vhost))

    def show(ctx: Context) -> Reply:
        authorise_read(ctx)
        vhost = ctx.param("vhost")
        require_vhost(ctx.broker, ctx.caller, vhost)
        policy = ctx.state.registry.policy(kind, vhost, ctx.param("name"))
        not_found_unless(policy is not None)
        assert policy is not None
        return ok(policy.as_json())

    def put(ctx: Context) -> Reply | Awaitable[Reply]:
        authorise_write(ctx)
        vhost = ctx.param("vhost")
        if vhost not in ctx.broker.vhosts:
            raise ApiError(404, "not_found", "vhost_not_found")
        require_vhost(ctx.broker, ctx.caller, vhost)
        try:
            policy = parse_policy(kind, vhost, ctx.param("name"), ctx.json_body())
        except PolicyInvalid as invalid:
            raise bad_request(str(invalid)) from None
        return metadata_writes.set_policy(ctx, kind, policy)

    def delete(ctx: Context) -> Reply | Awaitable[Reply]:
        authorise_write(ctx)
        vhost = ctx.param("vhost")
        require_vhost(ctx.broker, ctx.caller, vhost)
        return metadata_writes.clear_policy(ctx, kind, vhost, ctx.param("name"))

    return [
        Route(prefix, {"GET": list_all}),
        Route(f"{prefix}/{{vhost}}", {"GET": list_vhost}),
        Route(f"{prefix}/{{vhost}}/{{name}}", {"GET": show, "PUT": put, "DELETE": delete}),
    ]


# --- vhost-scoped parameters ------------------------------------------------------------------


def _parameters(ctx: Context, component: str | None, vhost: str | None) -> Reply:
    visible = set(login_vhosts(ctx.broker, ctx.caller))
    found = [
        p.as_json() for p in ctx.state.registry.parameters(component, vhost) if p.vhost in visible
    ]
    return ok(
        list_response(found, ctx.query, pageable=False, default_sort=("component", "vhost", "name"))
    )


def list_parameters(ctx: Context) -> Reply:
    return _parameters(ctx, None, None)


def list_component(ctx: Context) -> Reply:
    return _parameters(ctx, ctx.param("component"), None)


def list_component_vhost(ctx: Context) -> Reply:
    vhost = ctx.param("vhost")
    require_vhost(ctx.broker, ctx.caller, vhost)
    return _parameters(ctx, ctx.param("component"), vhost)


def show_parameter(ctx: Context) -> Reply:
    vhost = ctx.param("vhost")
    require_vhost(ctx.broker, ctx.caller, vhost)
    found = ctx.state.registry.parameter(ctx.param("component"), vhost, ctx.param("name"))
    not_found_unless(found is not None)
    assert found is not None
    return ok(found.as_json())


def checked_parameter(
    ctx: Context, component: str, vhost: str, name: str, body: dict[str, Any]
) -> Parameter:
    """The parameter a PUT body (or definitions entry) sets, or the 400 RabbitMQ answers."""
    require_keys(body, "value")
    problem = ctx.state.registry.validate_parameter(component, vhost, name, body["value"])
    if problem is not None:
        # RabbitMQ escapes the reason of a refused parameter as HTML (not a policy's).
        escaped = problem.replace("<", "&lt;").replace(">", "&gt;")
        raise bad_request(_VALIDATION_FAILED.format(escaped))
    return Parameter(component, vhost, name, body["value"])


def put_parameter(ctx: Context) -> Reply | Awaitable[Reply]:
    require_policymaker(ctx.caller)
    vhost = ctx.param("vhost")
    if vhost not in ctx.broker.vhosts:
        raise ApiError(404, "not_found", "vhost_not_found")
    require_vhost(ctx.broker, ctx.caller, vhost)
    parameter = checked_parameter(
        ctx, ctx.param("component"), vhost, ctx.param("name"), ctx.json_body()
    )
    return metadata_writes.set_parameter(ctx, parameter)


def delete_parameter(ctx: Context) -> Reply | Awaitable[Reply]:
    require_policymaker(ctx.caller)
    vhost = ctx.param("vhost")
    require_vhost(ctx.broker, ctx.caller, vhost)
    return metadata_writes.clear_parameter(ctx, ctx.param("component"), vhost, ctx.param("name"))


# --- global parameters --------------------------------------------------------------------------


def list_global(ctx: Context) -> Reply:
    require_admin(ctx.caller)
    found = [
        {"name": name, "value": value}
        for name, value in ctx.state.registry.global_parameters.items()
    ]
    return ok(list_response(found, ctx.query, pageable=False, default_sort=("name",)))


def show_global(ctx: Context) -> Reply:
    require_admin(ctx.caller)
    name = ctx.param("name")
    table = ctx.state.registry.global_parameters
    not_found_unless(name in table)
    return ok({"name": name, "value": table[name]})


def put_global(ctx: Context) -> Reply | Awaitable[Reply]:
    require_admin(ctx.caller)
    body = ctx.json_body()
    require_keys(body, "value")
    name = ctx.param("name")
    return metadata_writes.set_global_parameter(ctx, name, body["value"])


def delete_global(ctx: Context) -> Reply | Awaitable[Reply]:
    require_admin(ctx.caller)
    name = ctx.param("name")
    return metadata_writes.clear_global_parameter(ctx, name)


ROUTES = [
    *_policy_routes("policy", "api/policies"),
    *_policy_routes("operator_policy", "api/operator-policies"),
    Route("api/parameters", {"GET": list_parameters}),
    Route("api/parameters/{component}", {"GET": list_component}),
    Route("api/parameters/{component}/{vhost}", {"GET": list_component_vhost}),
    Route(
        "api/parameters/{component}/{vhost}/{name}",
        {"GET": show_parameter, "PUT": put_parameter, "DELETE": delete_parameter},
    ),
    Route("api/global-parameters", {"GET": list_global}),
    Route(
        "api/global-parameters/{name}",
        {"GET": show_global, "PUT": put_global, "DELETE": delete_global},
    ),
]
