"""The live streams' shared sampler: once a second it answers each watched API path once, from one
reading of the queues' figures, and hands the answers to every stream that watches them."""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import time
import weakref
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from ..metadata import MetadataUnavailable
from .access import Caller
from .context import Context, Reply, Route
from .errors import ApiError, object_not_found
from .request import Request
from .shared_answers import answers_of, shared_answer

if TYPE_CHECKING:
    from ..broker import Broker
    from .state import ManagementState

log = logging.getLogger(__name__)


class RouteFinder(Protocol):
    """The listener's route table, as far as the sampler looks paths up in it."""

    def match_path(self, path: str) -> tuple[Route, dict[str, str]] | None: ...


TICK_SECONDS = 1.0
# The API paths a stream may watch (these and the paths under them): the listings and figures
# the UI's pages show (ui/live.js has the same list).
LIVE_PATHS = frozenset(
    {
        "overview",
        "queues",
        "nodes",
        "cluster/status",
        "connections",
        "channels",
        "exchanges",
        "federation-links",
        "parameters",
        "policies",
        "operator-policies",
        "users",
        "vhosts",
        "permissions",
    }
)


def is_live_path(bare: str) -> bool:
    """Whether an API path (relative to /api/, without its query) is one the streams serve."""
    return any(bare == p or bare.startswith(f"{p}/") for p in LIVE_PATHS)


# One watched answer: a caller (what they may see) and a path with its query.
Watch = tuple[Caller, str]


@dataclass(eq=False, slots=True)
class Stream:
    """One open stream: what it watches, and the latest events not yet written to it."""

    caller: Caller
    peer_host: str
    paths: tuple[str, ...]
    pending: bytes = b""
    ready: asyncio.Event = field(default_factory=asyncio.Event)

    def deliver(self, events: bytes) -> None:
        # A client slower than the ticks gets the newest figures, not a backlog.
        self.pending = events
        self.ready.set()

    async def next_events(self) -> bytes:
        await self.ready.wait()
        self.ready.clear()
        events, self.pending = self.pending, b""
        return events


def event(path: str, status: int, body: object) -> bytes:
    """A server-sent event carrying one path's answer (its status and JSON body)."""
    data = json.dumps(
        {"path": path, "status": status, "body": body},
        separators=(",", ":"),
        ensure_ascii=False,
        default=str,
    )
    return f"event: answer\ndata: {data}\n\n".encode()


class LiveHub:
    """Open streams, and the one task that samples for all of them while any is open."""

    def __init__(self, broker: Broker, state: ManagementState, router: RouteFinder) -> None:
        self.broker = broker
        self.state = state
        self.router = router
        self.streams: set[Stream] = set()
        self.ticks = 0  # sampling ticks since the node started
        self.renders = 0  # answers computed for streams (one per watched path and caller)
        self._task: asyncio.Task[None] | None = None

    def resolve(self, path: str) -> bool:
        """Whether `path` (relative to /api/, with its query) may be watched."""
        bare = path.partition("?")[0]
        if not is_live_path(bare):
            return False
        found = self.router.match_path(f"/api/{bare}")
        return found is not None and "GET" in found[0].methods

    async def open(self, stream: Stream) -> None:
        """Start `stream` with answers of its own now, then share the ticks' answers."""
        stream.deliver(await self._render([(stream.caller, p) for p in stream.paths], stream))
        self.streams.add(stream)
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    def close(self, stream: Stream) -> None:
        self.streams.discard(stream)
        if not self.streams and self._task is not None:
            self._task.cancel()
            self._task = None

    async def _run(self) -> None:
        interval = TICK_SECONDS
        while self.streams:
            await asyncio.sleep(interval)
            started = time.monotonic()
            try:
                await self.tick()
            except Exception:  # a bug in one answer must not end every stream
                log.exception("live statistics tick failed")
            # Slow answers (a listing of many queues) space the ticks out, so that the streams
            # keep to about a third of the node's time.
            interval = max(TICK_SECONDS, 2 * (time.monotonic() - started))

    async def tick(self) -> None:
        self.ticks += 1
        streams = list(self.streams)
        watched = list(dict.fromkeys((s.caller, p) for s in streams for p in s.paths))
        answers = await self._answers(watched)
        for stream in streams:
            stream.deliver(b"".join(answers[(stream.caller, p)] for p in stream.paths))

    async def _render(self, watched: list[Watch], stream: Stream) -> bytes:
        answers = await self._answers(watched, stream.peer_host)
        return b"".join(answers[w] for w in watched)

    async def _answers(self, watched: list[Watch], peer_host: str = "") -> dict[Watch, bytes]:
        """Each watched path answered once for its caller, as its JSON route answers it."""
        self.renders += len(watched)
        started: dict[Watch, Reply | Awaitable[Reply]] = {}
        with self.state.one_reading():
            for caller, path in watched:
                started[(caller, path)] = self._call(caller, path, peer_host)
        answers: dict[Watch, bytes] = {}
        for (caller, path), answer in started.items():
            reply = answer if isinstance(answer, Reply) else await self._settle(answer)
            answers[(caller, path)] = event(path, reply.status, reply.body)
        return answers

    def _call(self, caller: Caller, path: str, peer_host: str) -> Reply | Awaitable[Reply]:
        request = Request.of("GET", f"/api/{path}", {})
        try:
            found = self.router.match_path(request.path)
            if found is None or "GET" not in found[0].methods:
                raise object_not_found()
            route, params = found
            context = Context(self.broker, self.state, request, caller, params, peer_host)
            handler = route.methods["GET"]
            return shared_answer(
                self.broker,
                answers_of(self.state),
                caller,
                request.target,
                lambda: handler(context),
            )
        except (ApiError, MetadataUnavailable) as error:
            return _refusal(error)
        except Exception:
            log.exception("live answer for %s failed", path)
            return _INTERNAL_ERROR

    async def _settle(self, pending: Awaitable[Reply]) -> Reply:
        try:
            reply = await pending
        except (ApiError, MetadataUnavailable) as error:
            return _refusal(error)
        except Exception:
            log.exception("live answer failed")
            return _INTERNAL_ERROR
        assert not inspect.isawaitable(reply)
        return reply


# Each node's hub, by its management state: every listener of the node shares it.
_HUBS: weakref.WeakKeyDictionary[ManagementState, LiveHub] = weakref.WeakKeyDictionary()


def attach_hub(broker: Broker, state: ManagementState, router: RouteFinder) -> LiveHub:
    """The node's hub, made on its first listener; it looks paths up in the latest listener's
    routes (every listener serves the same API)."""
    hub = _HUBS.get(state)
    if hub is None:
        hub = _HUBS[state] = LiveHub(broker, state, router)
    hub.router = router
    return hub


def hub_of(state: ManagementState) -> LiveHub | None:
    """The node's hub, or None where no listener serves the API (metrics only)."""
    return _HUBS.get(state)


_INTERNAL_ERROR = Reply(500, {"error": "internal_error", "reason": "see the node's log"})


def _refusal(error: ApiError | MetadataUnavailable) -> Reply:
    if isinstance(error, MetadataUnavailable):
        return Reply(503, {"error": "unavailable", "reason": str(error)})
    return Reply(error.status, error.body())
