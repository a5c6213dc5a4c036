"""The management listener on the node's event loop: HTTP connections, dispatch, and replies."""

from __future__ import annotations

import asyncio
import json
import logging
from collections import ChainMap, deque
from collections.abc import Awaitable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..metadata import MetadataUnavailable
from .access import ANONYMOUS, authenticate
from .context import Context, Reply, Route
from .errors import ApiError, method_not_allowed, object_not_found
from .http import CONTINUE, ContinueExpected, HttpError, Request, RequestParser, encode_response
from .metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from .metrics import metrics_text
from .node_control import NodeControl
from .routes import API_ROUTES, Router, split_path
from .state import ManagementState, management_state

if TYPE_CHECKING:
    from ..broker import Broker

log = logging.getLogger(__name__)

# A keep-alive connection with no request for this long is closed.
IDLE_TIMEOUT_SECONDS = 120.0
# A request head must be complete this long after its first byte: a client that trickles it
# (slowloris) would otherwise hold the connection, as every byte restarts the idle clock.
REQUEST_HEAD_TIMEOUT_SECONDS = 5.0
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
        # Replies being awaited: the loop keeps only weak references to tasks, and a client
        # that hangs up must not cut a definition change short.
        self._awaited: set[asyncio.Task[Reply]] = set()

    def handle(self, request: Request, peer_host: str) -> Reply | Awaitable[Reply]:
        """The reply, or an awaitable of it (which never raises) when a handler must wait."""
        try:
            answer = self._dispatch(request, peer_host)
        except (ApiError, MetadataUnavailable) as error:
            return _refusal(error, request)
        except Exception:
            log.exception("management request %s %s failed", request.method, request.path)
            return _internal_error()
        if isinstance(answer, Reply):
            return answer
        return self._settle(request, answer)

    def start_awaiting(self, pending: Awaitable[Reply]) -> asyncio.Task[Reply]:
        """A task for a reply `handle` returned as an awaitable, kept until it is done."""
        task = asyncio.ensure_future(pending)
        self._awaited.add(task)
        task.add_done_callback(self._awaited.discard)
        return task

    def stop_awaiting(self) -> None:
        """The node stops: nobody is left to hear these replies."""
        for task in list(self._awaited):
            task.cancel()

    async def _settle(self, request: Request, pending: Awaitable[Reply]) -> Reply:
        try:
            return await pending
        except (ApiError, MetadataUnavailable) as error:
            return _refusal(error, request)
        except Exception:
            log.exception("management request %s %s failed", request.method, request.path)
            return _internal_error()

    def _dispatch(self, request: Request, peer_host: str) -> Reply | Awaitable[Reply]:
        try:
            segments = split_path(request.path)
        except UnicodeDecodeError:
            raise object_not_found() from None
        method = "GET" if request.method == "HEAD" else request.method
        if segments in (["metrics"], ["metrics", "per-object"]) and method == "GET":
            text = metrics_text(self.broker, self.state, per_object=len(segments) == 2)
            return Reply(200, raw=text.encode("utf-8"), content_type=METRICS_CONTENT_TYPE)
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
        if route.public:
            caller = ANONYMOUS
        else:
            caller = authenticate(
                self.broker, request.header("authorization"), peer_host, self.state.http_auth
            )
        return handler(Context(self.broker, self.state, request, caller, params, peer_host))


def _internal_error() -> Reply:
    return Reply(500, {"error": "internal_error", "reason": "see the node's log"})


def _refusal(error: ApiError | MetadataUnavailable, request: Request) -> Reply:
    if isinstance(error, MetadataUnavailable):
        # The cluster could not decide the change (no majority): a client may retry later.
        return Reply(503, {"error": "unavailable", "reason": str(error)})
    headers = list(error.headers)
    if request.header("x-requested-with").lower() == "xmlhttprequest":
        # A script's request (the web UI's) shows its own login form: a basic-auth challenge
        # would make the browser open its password dialog over the page instead.
        headers = [(name, value) for name, value in headers if name != "www-authenticate"]
    return Reply(error.status, error.body(), headers)


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
    """One HTTP/1.1 client connection; pipelined requests are answered strictly in order.

    While a reply is awaited (a definition change the cluster decides), the requests behind it
    wait in a queue and reading stops, so a client cannot pile up work meanwhile.
    """

    def __init__(self, app: ManagementApp) -> None:
        self.app = app
        self.parser = RequestParser()
        self.transport: asyncio.Transport | None = None
        self.peer_host = ""
        self._idle: asyncio.TimerHandle | None = None
        self._head_deadline: asyncio.TimerHandle | None = None
        self._closing = False
        # Parsed but not yet answered; an HttpError ends the connection when its turn comes.
        self._queued: deque[Request | ContinueExpected | HttpError] = deque()
        self._awaiting: asyncio.Task[Reply] | None = None
        self._writing_paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        peer = transport.get_extra_info("peername") or ("", 0)
        self.peer_host = str(peer[0])
        transport.set_write_buffer_limits(high=WRITE_BUFFER_HIGH)  # type: ignore[attr-defined]
        self._arm_idle_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._closing = True
        self._queued.clear()
        if self._idle is not None:
            self._idle.cancel()
        self._stop_head_clock()

    def pause_writing(self) -> None:
        self._writing_paused = True
        self._follow_reading()

    def resume_writing(self) -> None:
        self._writing_paused = False
        self._follow_reading()

    def _follow_reading(self) -> None:
        """Read only while our output drains and no reply is awaited."""
        if self.transport is None or self._closing:
            return
        if self._writing_paused or self._awaiting is not None:
            self.transport.pause_reading()
        else:
            self.transport.resume_reading()

    def _arm_idle_timer(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
        self._idle = asyncio.get_running_loop().call_later(IDLE_TIMEOUT_SECONDS, self._close)

    def _follow_head_clock(self) -> None:
        """Run the head clock from the first byte of a head until the head is complete."""
        if self.parser.head_in_progress and self._awaiting is None and not self._closing:
            if self._head_deadline is None:
                self._head_deadline = asyncio.get_running_loop().call_later(
                    REQUEST_HEAD_TIMEOUT_SECONDS, self._head_timed_out
                )
        else:
            self._stop_head_clock()

    def _stop_head_clock(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _head_timed_out(self) -> None:
        self._head_deadline = None
        if not self._closing and self._awaiting is None:
            self._refuse(HttpError(408, "request head not received in time"))

    def _close(self) -> None:
        self._closing = True
        if self.transport is not None:
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        if self._closing or self.transport is None:
            return
        self._arm_idle_timer()
        try:
            self._queued.extend(self.parser.feed(data))
        except HttpError as error:
            self._queued.append(error)
        self._answer_queued()
        self._follow_head_clock()

    def _answer_queued(self) -> None:
        while self._queued and self._awaiting is None and not self._closing:
            event = self._queued.popleft()
            if isinstance(event, HttpError):
                self._refuse(event)
                return
            if isinstance(event, ContinueExpected):
                self._write(CONTINUE)
                continue
            answer = self.app.handle(event, self.peer_host)
            if isinstance(answer, Reply):
                self._send(event, answer)
            else:
                self._await(event, answer)

    def _await(self, request: Request, pending: Awaitable[Reply]) -> None:
        task = self.app.start_awaiting(pending)
        self._awaiting = task
        # A slow decision is not an idle client, nor a slow one: the timers start again with
        # the reply.
        if self._idle is not None:
            self._idle.cancel()
        self._stop_head_clock()
        self._follow_reading()
        task.add_done_callback(lambda done: self._reply_ready(request, done))

    def _reply_ready(self, request: Request, task: asyncio.Task[Reply]) -> None:
        self._awaiting = None
        if self._closing:
            return
        if task.cancelled():
            self._close()
            return
        self._arm_idle_timer()
        self._send(request, task.result())
        self._follow_reading()
        self._answer_queued()
        self._follow_head_clock()

    def _send(self, request: Request, reply: Reply) -> None:
        self._write(_encode(reply, request.keep_alive, request.method == "HEAD"))
        if not request.keep_alive:
            self._close()

    def _refuse(self, error: HttpError) -> None:
        body = json.dumps({"error": "bad_request", "reason": error.text}).encode()
        self._write(
            encode_response(
                error.status, body, [("content-type", "application/json")], keep_alive=False
            )
        )
        self._close()

    def _write(self, data: bytes) -> None:
        if self.transport is not None:
            self.transport.write(data)


class ManagementServer(asyncio.AbstractServer):
    """The listening server; closing it also stops the statistics sampler and the replies
    still awaited."""

    def __init__(
        self, server: asyncio.base_events.Server, state: ManagementState, app: ManagementApp
    ) -> None:
        self._server = server
        self._state = state
        self._app = app
        self._closed = False

    @property
    def sockets(self) -> Any:
        return self._server.sockets

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._state.server_stopped()
            self._app.stop_awaiting()
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
    node: NodeControl | None = None,
) -> ManagementServer:
    """Serve the management API and /metrics on host:port, on the running loop (the node's).

    `listeners` maps protocol names ("amqp", "mgmt", "cluster") to bound ports, for the
    overview and the port-listener health check; pass the node's ports dict. `extra_routes`
    are further API routes (federation's links, the cluster's status).
    """
    state = management_state(broker)
    state.node = node
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
    return ManagementServer(server, state, app)
