"""The management listeners on aiohttp's HTTP/1.1 server: requests in, replies out, and limits."""

from __future__ import annotations

import asyncio
import json
import logging
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from aiohttp import web
from aiohttp.abc import AbstractStreamWriter
from aiohttp.http import HttpVersion11, RawRequestMessage
from aiohttp.streams import StreamReader
from aiohttp.web_protocol import ERROR
from multidict import CIMultiDict

from .context import Reply
from .request import Request

log = logging.getLogger(__name__)

# A keep-alive connection with no request for this long is closed.
IDLE_TIMEOUT_SECONDS = 120.0
# A request head must be complete this long after its first byte: a client that trickles it
# (slowloris) would otherwise hold the connection, as every byte restarts the idle clock.
REQUEST_HEAD_TIMEOUT_SECONDS = 5.0
# Smaller bodies gain too little from gzip to pay for it.
COMPRESS_MIN_BYTES = 1024
# How long a refused upload may go on being read (and dropped) before the connection closes:
# closing on unread bytes would reset the connection before the client reads the refusal.
_LINGER_SECONDS = 5.0
# Request heads up to this long; bearer tokens and long query strings need more than 8 KiB.
_MAX_HEAD_LINE = 64 * 1024
# A whole large answer (a listing of thousands of queues) goes to the socket's buffer in one go
# instead of waking the handler every 64 KiB the client takes.
WRITE_BUFFER_HIGH = 4 << 20
_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
_COMMON_HEADERS = (
    ("server", "Leveret"),
    ("cache-control", "no-store"),
    ("vary", "accept, accept-encoding, origin"),
)
# RabbitMQ's own answer to a body over management.http.max_body_size.
BODY_TOO_LARGE = "Exceeded HTTP request body size limit"

# What a listener asks of the application: the reply to a request from a peer, over HTTPS or
# not; an awaitable of it (which never raises) when the handler must wait.
Dispatch = Callable[[Request, str, bool], Reply | Awaitable[Reply]]


@dataclass(frozen=True, slots=True)
class HttpLimits:
    max_body_bytes: int
    headers: tuple[tuple[str, str], ...]  # on every response
    https_headers: tuple[tuple[str, str], ...]  # on every response over HTTPS, besides


def json_refusal(status: int, reason: str) -> bytes:
    error = "internal_error" if status >= 500 else "bad_request"
    return json.dumps({"error": error, "reason": reason}).encode()


class _Connection(web.RequestHandler):
    """aiohttp's connection, with a clock on request heads and RabbitMQ-style JSON refusals."""

    def __init__(self, manager: web.Server, **options: Any) -> None:
        super().__init__(manager, **options)
        self._head_clock: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        if isinstance(transport, asyncio.WriteTransport):
            transport.set_write_buffer_limits(high=WRITE_BUFFER_HIGH)

    def data_received(self, data: bytes) -> None:
        heads_before = self._request_count
        in_body = self._body_expected()
        super().data_received(data)
        if self._request_count != heads_before:
            self._stop_head_clock()
        elif data and not in_body and self._head_clock is None:
            # The first bytes of a head: it must be complete in time.
            self._head_clock = self._loop.call_later(
                REQUEST_HEAD_TIMEOUT_SECONDS, self._head_timed_out
            )

    def connection_lost(self, exc: BaseException | None) -> None:
        self._stop_head_clock()
        super().connection_lost(exc)

    def _body_expected(self) -> bool:
        """Bytes arriving now belong to a request body, not to a new head."""
        if any(not payload.is_eof() for _, payload in self._messages):
            return True
        current = self._current_request
        return current is not None and not current.content.is_eof()

    def _stop_head_clock(self) -> None:
        if self._head_clock is not None:
            self._head_clock.cancel()
            self._head_clock = None

    def _head_timed_out(self) -> None:
        self._head_clock = None
        if self.transport is None:
            return
        if self._request_in_progress or self._messages:
            # A slow answer is not a slow client: look again once it has had its turn.
            self._head_clock = self._loop.call_later(
                REQUEST_HEAD_TIMEOUT_SECONDS, self._head_timed_out
            )
            return
        body = json_refusal(408, "request head not received in time")
        self.transport.write(
            b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
            b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(body), body)
        )
        self.force_close()

    def handle_error(
        self,
        request: web.BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        """Bytes that are not HTTP, or a failure past the application's own handling."""
        if status >= 500:
            log.error("management request failed", exc_info=exc)
        else:
            log.debug("refused a malformed request from %s: %s", request.remote, message)
        if request.writer.output_size > 0:
            raise ConnectionError("the response had begun; the connection is dropped")
        reason = "see the node's log" if status >= 500 else message or HTTPStatus(status).phrase
        response = web.Response(status=status, body=json_refusal(status, reason))
        response.headers["server"] = "Leveret"
        response.headers["content-type"] = "application/json"
        response.headers["connection"] = "close"
        response.force_close()
        return response


class _Server(web.Server):
    def __call__(self) -> web.RequestHandler:
        return _Connection(self, loop=self._loop, **self._kwargs)

    def _make_request(
        self,
        message: RawRequestMessage,
        payload: StreamReader,
        protocol: web.RequestHandler,
        writer: AbstractStreamWriter,
        task: asyncio.Task[None],
    ) -> web.BaseRequest:
        if message is ERROR:
            # aiohttp answers bytes it cannot parse as HTTP/1.0; the refusal is HTTP/1.1's.
            message = message._replace(version=HttpVersion11)
        return web.BaseRequest(message, payload, protocol, writer, task, self._loop)


class HttpListener:
    """Turns aiohttp requests into `Request`s for the application and its replies into
    responses, with the body cap, 100-continue, compression and the headers every answer has."""

    def __init__(self, dispatch: Dispatch, limits: HttpLimits) -> None:
        self._dispatch = dispatch
        self._limits = limits
        self.server = _Server(
            self._serve,
            keepalive_timeout=IDLE_TIMEOUT_SECONDS,
            lingering_time=_LINGER_SECONDS,
            max_line_size=_MAX_HEAD_LINE,
            max_field_size=_MAX_HEAD_LINE,
            access_log=None,
        )

    async def _serve(self, raw: web.BaseRequest) -> web.StreamResponse:
        secure = raw.secure
        body = await self._read_body(raw)
        if body is None:
            reply = Reply(400, {"error": "bad_request", "reason": BODY_TOO_LARGE})
            response = self._response(raw, reply, secure)
            response.force_close()
            return response
        headers: dict[str, str] = {}
        for name, value in raw.headers.items():
            key = name.lower()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
        request = Request.of(raw.method, raw.raw_path, headers, body)
        answer = self._dispatch(request, raw.remote or "", secure)
        if not isinstance(answer, Reply):
            answer = await answer
        if answer.stream is not None:
            return await answer.stream(raw, self._headers(secure))
        return self._response(raw, answer, secure)

    async def _read_body(self, raw: web.BaseRequest) -> bytes | None:
        """The whole body, or None when it is larger than allowed (refused before it is read
        when its length is announced)."""
        limit = self._limits.max_body_bytes
        announced = raw.content_length
        if announced is not None and announced > limit:
            return None
        if raw.headers.get("expect", "").lower() == "100-continue" and raw.version == HttpVersion11:
            await raw.writer.write(_CONTINUE)
        if not raw.body_exists:
            return b""
        chunks: list[bytes] = []
        size = 0
        async for chunk in raw.content.iter_any():
            size += len(chunk)
            if size > limit:
                return None
            chunks.append(chunk)
        return b"".join(chunks)

    def _headers(self, secure: bool) -> CIMultiDict[str]:
        headers: CIMultiDict[str] = CIMultiDict(_COMMON_HEADERS)
        headers.extend(self._limits.headers)
        if secure:
            headers.extend(self._limits.https_headers)
        return headers

    def _response(self, raw: web.BaseRequest, reply: Reply, secure: bool) -> web.Response:
        headers = self._headers(secure)
        headers.extend(reply.headers)
        if reply.raw is not None:
            body = reply.raw
            if body or reply.status == 200:
                headers["content-type"] = reply.content_type
        elif reply.body is not None:
            body = json.dumps(
                reply.body, separators=(",", ":"), ensure_ascii=False, default=str
            ).encode("utf-8")
            headers["content-type"] = "application/json"
        else:
            body = b""
        response = web.Response(status=reply.status, body=body, headers=headers)
        if len(body) >= COMPRESS_MIN_BYTES and "accept-encoding" in raw.headers:
            response.enable_compression()
        return response


async def listen(
    listener: HttpListener, host: str, port: int, tls: ssl.SSLContext | None
) -> asyncio.Server:
    """Accept connections on host:port (with TLS when `tls` is given), on the running loop."""
    loop = asyncio.get_running_loop()
    return await loop.create_server(
        listener.server, host, port, ssl=tls, reuse_address=True, backlog=1024
    )
