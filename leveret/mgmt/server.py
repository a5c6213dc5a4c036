"""The management API's application (dispatch, authentication, errors) and its listeners."""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections import ChainMap
from collections.abc import Awaitable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..metadata import MetadataUnavailable
from .access import ANONYMOUS, authenticate
from .context import Context, Reply, Route
from .errors import ApiError, method_not_allowed, object_not_found
from .http_settings import http_limits
from .listener import REQUEST_HEAD_TIMEOUT_SECONDS as REQUEST_HEAD_TIMEOUT_SECONDS
from .listener import HttpListener, listen
from .live import attach_hub, is_live_path
from .metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from .metrics import metrics_text
from .node_control import NodeControl
from .request import Request
from .routes import API_ROUTES, Router, split_path
from .shared_answers import answers_of, shared_answer
from .state import ManagementState, management_state

if TYPE_CHECKING:
    from ..broker import Broker

log = logging.getLogger(__name__)

_METHOD_ORDER = ("HEAD", "GET", "PUT", "POST", "DELETE")
_METRICS_PATHS = (["metrics"], ["metrics", "per-object"])
# How long replies still being decided may take to go out when a listener closes.
_SHUTDOWN_GRACE_SECONDS = 1.0


class ManagementApp:
    """Answers one request: metrics, or an API route with authentication first.

    `metrics_only` serves /metrics alone (Prometheus on its own port). `https_port` set on a
    plain listener means credentials are taken over HTTPS only: requests that carry them, or
    that need them, are refused here with 403 (a 401 would only invite a browser to send them).
    """

    def __init__(
        self,
        broker: Broker,
        state: ManagementState,
        routes: Iterable[Route],
        *,
        metrics_only: bool = False,
        https_port: int | None = None,
    ) -> None:
        self.broker = broker
        self.state = state
        self.router = Router(routes)
        self._metrics_only = metrics_only
        self._https_port = https_port

    def handle(self, request: Request, peer_host: str, secure: bool) -> Reply | Awaitable[Reply]:
        """The reply, or an awaitable of it (which never raises) when a handler must wait."""
        try:
            answer = self._dispatch(request, peer_host, secure)
        except (ApiError, MetadataUnavailable) as error:
            return _refusal(error, request)
        except Exception:
            log.exception("management request %s %s failed", request.method, request.path)
            return _internal_error()
        if isinstance(answer, Reply):
            return answer
        return self._settle(request, answer)

    async def _settle(self, request: Request, pending: Awaitable[Reply]) -> Reply:
        try:
            return await pending
        except (ApiError, MetadataUnavailable) as error:
            return _refusal(error, request)
        except Exception:
            log.exception("management request %s %s failed", request.method, request.path)
            return _internal_error()
        finally:
            if request.method not in ("GET", "HEAD"):
                answers_of(self.state).forget()  # a change made while answers were being shared

    def _dispatch(self, request: Request, peer_host: str, secure: bool) -> Reply | Awaitable[Reply]:
        try:
            segments = split_path(request.path)
        except UnicodeDecodeError:
            raise object_not_found() from None
        method = "GET" if request.method == "HEAD" else request.method
        if segments in _METRICS_PATHS and method == "GET":
            self._check_transport(request, secure, public=True)
            text = metrics_text(self.broker, self.state, per_object=len(segments) == 2)
            return Reply(200, raw=text.encode("utf-8"), content_type=METRICS_CONTENT_TYPE)
        if self._metrics_only:
            raise object_not_found()
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
        self._check_transport(request, secure, public=route.public)
        if route.public:
            caller = ANONYMOUS
        else:
            caller = authenticate(
                self.broker, request.header("authorization"), peer_host, self.state.http_auth
            )
        context = Context(self.broker, self.state, request, caller, params, peer_host)
        if method != "GET":
            answers_of(self.state).forget()  # the change shows in the next answers
            return handler(context)
        if not (request.path.startswith("/api/") and is_live_path(request.path[5:])):
            return handler(context)
        return shared_answer(
            self.broker, answers_of(self.state), caller, request.target, lambda: handler(context)
        )

    def _check_transport(self, request: Request, secure: bool, *, public: bool) -> None:
        if self._https_port is None or secure:
            return
        if public and not request.header("authorization"):
            return
        raise ApiError(
            403,
            "https_required",
            f"credentials are accepted over HTTPS only, on port {self._https_port}",
        )


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


class ManagementServer(asyncio.AbstractServer):
    """One listening socket of the management API; closing it also ends its connections, and
    the statistics sampler when it was the last."""

    def __init__(
        self, server: asyncio.Server, listener: HttpListener, state: ManagementState
    ) -> None:
        self._server = server
        self._listener = listener
        self._state = state
        self._closed = False

    @property
    def sockets(self) -> Any:
        return self._server.sockets

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._state.server_stopped()
            self._listener.server.pre_shutdown()
        self._server.close()

    async def wait_closed(self) -> None:
        # Replies still awaited (and streams) have a moment to go out; nobody is left to hear
        # them after. Then the socket is done with.
        await self._listener.server.shutdown(_SHUTDOWN_GRACE_SECONDS)
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
    tls: ssl.SSLContext | None = None,
    name: str = "mgmt",
    metrics_only: bool = False,
    https_port: int | None = None,
) -> ManagementServer:
    """Serve the management API and /metrics on host:port, on the running loop (the node's).

    `listeners` maps listener names ("amqp", "mgmt", "cluster", ...) to bound ports, for the
    overview and the port-listener health check; pass the node's ports dict. `extra_routes`
    are further API routes (federation's links, the cluster's status). With `tls` the
    listener speaks HTTPS; `name` is its key among the listeners; `metrics_only` serves
    /metrics alone; `https_port` makes a plain listener refuse credentials (see ManagementApp).
    """
    state = management_state(broker)
    state.node = node
    app = ManagementApp(
        broker,
        state,
        [*API_ROUTES, *extra_routes],
        metrics_only=metrics_only,
        https_port=https_port,
    )
    if not metrics_only:
        attach_hub(broker, state, app.router)
    listener = HttpListener(app.handle, http_limits(broker.config))
    server = await listen(listener, host, port, tls)
    bound = server.sockets[0].getsockname()[1]
    state.listen_host = host
    # A live view of the node's ports in which this listener's own port is the bound one.
    base: Mapping[str, int] = (
        listeners if listeners is not None else {"amqp": broker.config.amqp_port}
    )
    # Each listener started on this node adds its own port to those of the earlier ones.
    own = dict(state.listeners.maps[0]) if isinstance(state.listeners, ChainMap) else {}
    own[name] = bound
    state.listeners = ChainMap(own, base)  # type: ignore[arg-type]  # read only
    state.server_started()
    what = "Prometheus metrics" if metrics_only else "management API"
    log.info("%s listening on %s:%d%s", what, host, bound, " (HTTPS)" if tls else "")
    return ManagementServer(server, listener, state)
