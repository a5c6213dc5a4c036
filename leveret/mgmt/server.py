"""The management listener on the node's event loop: HTTP connections, dispatch, and replies."""

from __future__ import annotations

import asyncio
import json
import logging
from collections import ChainMap
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .access import authenticate
from .context import Context, Reply, Route
from .errors import ApiError, method_not_allowed, object_not_found
from .http import CONTINUE, ContinueExpected, HttpError, Request, RequestParser, encode_response
from .metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from .metrics import metrics_text
from .routes import API_ROUTES, Router, split_path
from .state import ManagementState, management_state

if TYPE_CHECKING:
    from ..broker import Broker

log = logging.getLogger(__name__)

# A keep-alive connection with no request for this long is closed.
IDLE_TIMEOUT_SECONDS = 120.0
# Stop reading a client's requests while this much of our output waits to be sent.
WRITE_BUFFER_HIGH = 4 << 20
_METHOD_ORDER = ("HEAD", "GET", "PUT", "POST", "DELETE")
_COMMON_HEADERS = [("cache-control", "no-cache"), ("vary", "accept, accept-encoding, origin")]


class ManagementApp:
    """Answers one request: metrics, or an API route with authentication first."""

    def __init__(self, broker: Broker, state: ManagementState, routes: Iterable[Route]) -> None:
        self.broker = broker
        self.state = state
        self.router = Router(routes)

    def handle(self, request: Request, peer_host: str) -> Reply:
        try:
            return self._dispatch(request, peer_host)
        except ApiError as error:
            return Reply(error.status, error.body(), list(error.headers))
        except Exception:
            log.exception("management request %s %s failed", request.method, request.path)
            return Reply(500, {"error": "internal_error", "reason": "see the node's log"})

    def _dispatch(self, request: Request, peer_host: str) -> Reply:
        try:
            segments = split_path(request.path)
        except UnicodeDecodeError:
            raise object_not_found() from None
        method = "GET" if request.method == "HEAD" else request.method
        if segments in (["metrics"], ["metrics", "per-object"]) and method == "GET":
            text = metrics_text(self.broker, self.state, per_object=len(segments) == 2)
            return Reply(200, raw=text.encode("utf-8"), content_type=METRICS_CONTENT_TYPE)
        if not segments:
            return Reply(
                200,
                raw=b"Leveret management: see /api/overview and /metrics\n",
                content_type="text/plain",
            )
        found = self.router.match(segments)
        if found is None:
            raise object_not_found()
        route, params = found
        allowed = [
            m
            for m in _METHOD_ORDER
            if m in route.methods or (m == "HEAD" and "GET" in route.methods)
        ]
        allowed.append("OPTIONS")
        if method == "OPTIONS":
            return Reply(200, headers=[("allow", ", ".join(allowed))], raw=b"")
        handler = route.methods.get(method)
        if handler is None:
            raise method_not_allowed(allowed)
        caller = authenticate(
            self.broker, request.header("authorization"), peer_host, self.state.http_auth
        )
        return handler(Context(self.broker, self.state, request, caller, params, peer_host))


def _encode(reply: Reply, keep_alive: bool, head_only: bool) -> bytes:
    headers = list(_COMMON_HEADERS) + reply.headers
    if reply.raw is not None:
        body = reply.raw
        if body or reply.status == 200:
            headers.append(("content-type", reply.content_type))
    elif reply.body is not None:
        body = json.dumps(
            reply.body, separators=(",", ":"), ensure_ascii=False, default=str
        ).encode("utf-8")
        headers.append(("content-type", "application/json"))
    else:
        body = b""
    return encode_response(reply.status, body, headers, keep_alive=keep_alive, head_only=head_only)


class ManagementProtocol(asyncio.Protocol):
    """One HTTP/1.1 client connection; requests are answered in order, synchronously."""

    def __init__(self, app: ManagementApp) -> None:
        self.app = app
        self.parser = RequestParser()
        self.transport: asyncio.Transport | None = None
        self.peer_host = ""
        self._idle: asyncio.TimerHandle | None = None
        self._closing = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        peer = transport.get_extra_info("peername") or ("", 0)
        self.peer_host = str(peer[0])
        transport.set_write_buffer_limits(high=WRITE_BUFFER_HIGH)  # type: ignore[attr-defined]
        self._arm_idle_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._closing = True
        if self._idle is not None:
            self._idle.cancel()

    def pause_writing(self) -> None:
        if self.transport is not None:
            self.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.transport is not None and not self._closing:
            self.transport.resume_reading()

    def _arm_idle_timer(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
        self._idle = asyncio.get_running_loop().call_later(IDLE_TIMEOUT_SECONDS, self._close)

    def _close(self) -> None:
        self._closing = True
        if self.transport is not None:
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        if self._closing or self.transport is None:
            return
        self._arm_idle_timer()
        try:
            events = self.parser.feed(data)
        except HttpError as error:
            body = json.dumps({"error": "bad_request", "reason": error.text}).encode()
            self.transport.write(
                encode_response(
                    error.status, body, [("content-type", "application/json")], keep_alive=False
                )
            )
            self._close()
            return
        for event in events:
            if isinstance(event, ContinueExpected):
                self.transport.write(CONTINUE)
                continue
            reply = self.app.handle(event, self.peer_host)
            self.transport.write(_encode(reply, event.keep_alive, event.method == "HEAD"))
            if not event.keep_alive:
                self._close()
                return


class ManagementServer(asyncio.AbstractServer):
    """The listening server; closing it also stops the statistics sampler."""

    def __init__(self, server: asyncio.base_events.Server, state: ManagementState) -> None:
        self._server = server
        self._state = state
        self._closed = False

    @property
    def sockets(self) -> Any:
        return self._server.sockets

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._state.server_stopped()
        self._server.close()

    async def wait_closed(self) -> None:
        await self._server.wait_closed()

    def get_loop(self) -> asyncio.AbstractEventLoop:
        return self._server.get_loop()

    def is_serving(self) -> bool:
        return self._server.is_serving()

    async def start_serving(self) -> None:
        await self._server.start_serving()

    async def serve_forever(self) -> None:
        await self._server.serve_forever()


async def start_management(
    broker: Broker,
    host: str,
    port: int,
    *,
    listeners: Mapping[str, int] | None = None,
    extra_routes: Iterable[Route] = (),
) -> ManagementServer:
    """Serve the management API and /metrics on host:port, on the running loop (the node's).

    `listeners` maps protocol names ("amqp", "mgmt", "cluster") to bound ports, for the
    overview and the port-listener health check; pass the node's ports dict. `extra_routes`
    are further API routes (federation's links, the cluster's status).
    """
    state = management_state(broker)
    app = ManagementApp(broker, state, [*API_ROUTES, *extra_routes])
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: ManagementProtocol(app), host, port, reuse_address=True
    )
    bound = server.sockets[0].getsockname()[1]
    state.listen_host = host
    # A live view of the node's ports in which this listener's own port is the bound one.
    base: Mapping[str, int] = (
        listeners if listeners is not None else {"amqp": broker.config.amqp_port}
    )
    state.listeners = ChainMap({"mgmt": bound}, base)  # type: ignore[arg-type]  # read only
    state.server_started()
    log.info("management API listening on %s:%d", host, bound)
    return ManagementServer(server, state)
