"""`/api/live?path=overview&path=nodes`: the figures behind API paths, pushed as server-sent
events once a second, as the caller's GET of each path would answer them."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import parse_qsl

from aiohttp import web

from .access import require_monitor
from .context import Context, Reply, Route, ok
from .errors import bad_request
from .live import LiveHub, Stream, hub_of
from .shared_answers import answers_of

if TYPE_CHECKING:
    from multidict import CIMultiDict

# A page watches two or three paths; more is a mistake, or a client's abuse.
MAX_PATHS = 8


def watched_paths(ctx: Context, hub: LiveHub) -> tuple[str, ...]:
    query = ctx.request.target.partition("?")[2]
    paths = tuple(dict.fromkeys(v for k, v in parse_qsl(query) if k == "path"))
    if not paths or len(paths) > MAX_PATHS:
        raise bad_request(f"give 1 to {MAX_PATHS} path parameters")
    for path in paths:
        if not hub.resolve(path):
            raise bad_request(f"{path} cannot be watched")
    return paths


def live(ctx: Context) -> Reply:
    hub = hub_of(ctx.state)
    if hub is None:
        raise bad_request("live streams are not served on this listener")
    stream = Stream(ctx.caller, ctx.peer_host, watched_paths(ctx, hub))

    async def serve(raw: web.BaseRequest, headers: CIMultiDict[str]) -> web.StreamResponse:
        response = web.StreamResponse(headers=headers)
        response.content_type = "text/event-stream"
        # Proxies must pass each event on at once rather than buffer the answer.
        response.headers["x-accel-buffering"] = "no"
        await response.prepare(raw)
        await hub.open(stream)
        try:
            while raw.transport is not None and not raw.transport.is_closing():
                await response.write(await stream.next_events())
        except (ConnectionError, RuntimeError):
            pass  # the client went away (aiohttp raises either when writing then)
        finally:
            hub.close(stream)
        return response

    return Reply(stream=serve)


def live_stats(ctx: Context) -> Reply:
    """The live streams' work since the node started: with one sampling shared by every
    stream, ticks and readings grow alike however many streams are open."""
    require_monitor(ctx.caller)
    hub = hub_of(ctx.state)
    return ok(
        {
            "streams": len(hub.streams) if hub is not None else 0,
            "ticks": hub.ticks if hub is not None else 0,
            "renders": hub.renders if hub is not None else 0,
            "queue_readings": ctx.state.readings,
            "answers_shared": answers_of(ctx.state).shared,
        }
    )


ROUTES = [Route("api/live", {"GET": live}), Route("api/live/stats", {"GET": live_stats})]
