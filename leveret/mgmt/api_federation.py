"""`/api/federation-links`: the federation links of this node, with RabbitMQ's fields.

Federation plugs in through `attach_federation` (this package never imports it). Beyond
RabbitMQ's fields, a running link says whether it is pulling now or waiting for local demand
(`demand`: consuming | waiting).
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any, Protocol

from .access import require_monitor, require_vhost, visible_vhosts
from .context import NO_CONTENT, Context, Reply, Route, not_found_unless, ok
from .listing import list_response

if TYPE_CHECKING:
    from ..broker import Broker


class FederationLinks(Protocol):
    """What the management API needs from federation (federation.supervisor)."""

    def describe(self) -> list[dict[str, Any]]: ...

    def restart(self, vhost: str, link: str) -> bool: ...


_links: weakref.WeakKeyDictionary[Any, FederationLinks] = weakref.WeakKeyDictionary()


def attach_federation(broker: Broker, links: FederationLinks) -> None:
    """Serve `links` on the management API of `broker`'s node."""
    _links[broker] = links


def _described(ctx: Context, vhost: str | None, down_only: bool = False) -> list[dict[str, Any]]:
    links = _links.get(ctx.broker)
    if links is None:
        return []
    allowed = set(visible_vhosts(ctx.broker, ctx.caller))
    return [
        link
        for link in links.describe()
        if link["vhost"] in allowed
        and (vhost is None or link["vhost"] == vhost)
        and (not down_only or link["status"] != "running")
    ]


def list_links(ctx: Context) -> Reply:
    return ok(list_response(_described(ctx, None), ctx.query, default_sort=("vhost", "queue")))


def list_vhost_links(ctx: Context) -> Reply:
    vhost = ctx.param("vhost")
    require_vhost(ctx.broker, ctx.caller, vhost)
    return ok(list_response(_described(ctx, vhost), ctx.query, default_sort=("vhost", "queue")))


def list_down(ctx: Context) -> Reply:
    return ok(list_response(_described(ctx, None, True), ctx.query, default_sort=("vhost",)))


def list_vhost_down(ctx: Context) -> Reply:
    vhost = ctx.param("vhost")
    require_vhost(ctx.broker, ctx.caller, vhost)
    return ok(list_response(_described(ctx, vhost, True), ctx.query, default_sort=("vhost",)))


def restart_link(ctx: Context) -> Reply:
    require_monitor(ctx.caller)
    vhost = ctx.param("vhost")
    require_vhost(ctx.broker, ctx.caller, vhost)
    links = _links.get(ctx.broker)
    not_found_unless(links is not None and links.restart(vhost, ctx.param("id")))
    return Reply(NO_CONTENT)


ROUTES = [
    Route("api/federation-links", {"GET": list_links}),
    Route("api/federation-links/state/down", {"GET": list_down}),
    Route("api/federation-links/state/down/{vhost}", {"GET": list_vhost_down}),
    Route("api/federation-links/{vhost}", {"GET": list_vhost_links}),
    Route(
        "api/federation-links/vhost/{vhost}/{id}/{node}/restart",
        {"DELETE": restart_link},
    ),
]
