"""The route table: which handler answers a method on a path, with the path's parameters."""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import unquote

from . import (
    api_bindings,
    api_cluster,
    api_connections,
    api_definitions,
    api_exchanges,
    api_federation,
    api_health,
    api_limits,
    api_live,
    api_overview,
    api_policies,
    api_queues,
    api_users,
    api_vhosts,
    probes,
    ui_assets,
)
from .context import Route

API_ROUTES: tuple[Route, ...] = (
    *api_cluster.ROUTES,  # first: its /api/nodes (every cluster member) wins over the overview's
    *api_overview.ROUTES,
    *api_queues.ROUTES,
    *api_exchanges.ROUTES,
    *api_bindings.ROUTES,
    *api_connections.ROUTES,
    *api_vhosts.ROUTES,
    *api_users.ROUTES,
    *api_policies.ROUTES,
    *api_definitions.ROUTES,
    *api_health.ROUTES,
    *api_limits.ROUTES,
    *api_federation.ROUTES,
    *api_live.ROUTES,
    *probes.ROUTES,
    *ui_assets.ROUTES,  # the web UI's page and modules
)


def split_path(path: str) -> list[str]:
    """Path segments, each percent-decoded on its own (so `%2F` stays inside its segment).

    `.` and `..` segments, also percent-encoded, are resolved as RabbitMQ's HTTP server does:
    `/api/queues/%2F/..` is `/api/queues/%2F`, never a name."""
    segments = path.strip("/").split("/") if path.strip("/") else []
    resolved: list[str] = []
    for segment in (unquote(segment, errors="strict") for segment in segments):
        if segment == "..":
            if resolved:
                resolved.pop()
        elif segment != ".":
            resolved.append(segment)
    return resolved


class Router:
    def __init__(self, routes: Iterable[Route]) -> None:
        self._routes = [(route.segments, route) for route in routes]

    def match_path(self, path: str) -> tuple[Route, dict[str, str]] | None:
        """The route for a percent-encoded path like `/api/queues/%2F/q`."""
        try:
            return self.match(split_path(path))
        except UnicodeDecodeError:
            return None

    def match(self, segments: list[str]) -> tuple[Route, dict[str, str]] | None:
        """The route for these segments; literal segments win over parameters
        (`users/without-permissions` before `users/{user}`)."""
        best: tuple[tuple[int, ...], Route, dict[str, str]] | None = None
        for pattern, route in self._routes:
            if len(pattern) != len(segments):
                continue
            params: dict[str, str] = {}
            score: list[int] = []
            for expected, actual in zip(pattern, segments, strict=True):
                if expected.startswith("{") and expected.endswith("}"):
                    params[expected[1:-1]] = actual
                    score.append(0)
                elif expected == actual:
                    score.append(1)
                else:
                    break
            else:
                ranked = tuple(score)
                if best is None or ranked > best[0]:
                    best = (ranked, route, params)
        if best is None:
            return None
        return best[1], best[2]
