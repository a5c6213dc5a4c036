"""A small asyncio AMQP 0-9-1 client for federation links, on Leveret's codec: one channel,
deliveries parsed inline and handed over as they complete, settlements written in batches."""

from __future__ import annotations

import asyncio
import functools
import ssl
import struct
import urllib.parse
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from leveret.amqp import methods as m
from leveret.amqp.constants import (
    DEFAULT_FRAME_MAX,
    FRAME_BODY,
    FRAME_END,
    FRAME_HEADER,
    FRAME_HEARTBEAT,
    FRAME_METHOD,
    PROTOCOL_HEADER,
)
from leveret.amqp.frames import HEARTBEAT_FRAME, content_frames, method_frame
from leveret.amqp.methods import Method, decode_method
from leveret.tls import TLSSettings, client_context, parse_settings

# RabbitMQ's URI query keys for TLS (amqp_uri); the others (heartbeat, ...) are not TLS's.
TLS_QUERY_KEYS = ("cacertfile", "certfile", "keyfile", "verify", "fail_if_no_peer_cert")

# Called once per complete delivery: (delivery tag, redelivered, exchange, routing key, content
# header payload, body). Called from data_received: no task per message.
DeliveryHandler = Callable[[int, bool, str, str, bytes, bytes], None]

_UNPACK_HEAD = struct.Struct(">BHI").unpack_from
_UNPACK_I = struct.Struct(">I").unpack_from
_UNPACK_Q = struct.Struct(">Q").unpack_from
_UNPACK_QB = struct.Struct(">QB").unpack_from
# basic.ack and basic.nack frames on a channel: the prefix, delivery tag, bits, frame end.
_ACK_FRAME = struct.Struct(">BHIHHQBB").pack
_DELIVER = (60 << 16) | 60
_CANCEL = (60 << 16) | 30
_RETURN = (60 << 16) | 50
_CONNECTION_CLOSE = (10 << 16) | 50
_CONNECTION_CLOSE_OK = (10 << 16) | 51
_CHANNEL_CLOSE = (20 << 16) | 40
_CHANNEL_CLOSE_OK = (20 << 16) | 41
_IGNORED = frozenset({(10 << 16) | 60, (10 << 16) | 61})  # connection.blocked / unblocked
_ACCESS_REFUSED = 403
# Missed heartbeat intervals after which the upstream counts as gone (RabbitMQ's rule: two).
_MISSED_HEARTBEATS = 2
# The largest frame this client accepts (it never offers more in connection.tune-ok), and the
# largest message (RabbitMQ's own ceiling): an upstream that announces more is refused before
# anything of it is kept, so a broken or hostile upstream cannot make the buffer grow unbounded.
_MAX_FRAME = DEFAULT_FRAME_MAX
_MAX_BODY = 512 * 1024 * 1024
# What the next content frame of the open channel may be.
_EXPECT_METHOD, _EXPECT_HEADER, _EXPECT_BODY = 0, 1, 2


class UpstreamClosed(Exception):
    """The upstream closed the channel or the connection, or the socket went away."""

    def __init__(self, reply_code: int, reply_text: str) -> None:
        super().__init__(f"{reply_code} {reply_text}" if reply_code else reply_text)
        self.reply_code = reply_code
        self.reply_text = reply_text


class AuthenticationFailed(Exception):
    """The upstream refused the credentials (or closed the socket right after them)."""


@dataclass(frozen=True)
class Endpoint:
    """What an amqp:// or amqps:// URI says about where and how to connect."""

    host: str
    port: int
    user: str
    password: str
    vhost: str
    tls: bool = False
    heartbeat: int | None = None  # seconds; None takes the server's proposal
    query: tuple[tuple[str, str], ...] = ()

    @property
    def tls_settings(self) -> TLSSettings:
        """RabbitMQ's URI query keys for TLS: cacertfile, certfile, keyfile, verify. Unlike
        Erlang's default, the upstream's certificate is checked unless verify=verify_none
        (against cacertfile, or the system's CAs)."""
        options = {key: value for key, value in self.query if key in TLS_QUERY_KEYS}
        options.setdefault("verify", "verify_peer")
        return parse_settings(options, "uri")

    @property
    def server_name(self) -> str | None:
        """The name sent in SNI and checked against the certificate: server_name_indication
        (RabbitMQ's key), else the URI's host; None when it is `disable`."""
        name = dict(self.query).get("server_name_indication", self.host)
        return None if name == "disable" else name

    @property
    def external_auth(self) -> bool:
        """auth_mechanism=external: log in as the client certificate's user (SASL EXTERNAL)."""
        return dict(self.query).get("auth_mechanism", "").lower() == "external"

    def ssl_context(self) -> ssl.SSLContext | None:
        if not self.tls:
            return None
        return client_context(self.tls_settings, check_hostname=self.server_name is not None)


def parse_uri(uri: str) -> Endpoint:
    parts = urllib.parse.urlsplit(uri)
    if parts.scheme not in ("amqp", "amqps"):
        raise ValueError(f"only amqp:// and amqps:// URIs are supported, not {uri!r}")
    tls = parts.scheme == "amqps"
    path = parts.path.removeprefix("/")
    query = tuple(urllib.parse.parse_qsl(parts.query))
    heartbeat = dict(query).get("heartbeat")
    return Endpoint(
        host=parts.hostname or "127.0.0.1",
        port=parts.port or (5671 if tls else 5672),
        user=urllib.parse.unquote(parts.username or "guest"),
        password=urllib.parse.unquote(parts.password or "guest"),
        vhost=urllib.parse.unquote(path) if path else "/",
        tls=tls,
        heartbeat=int(heartbeat) if heartbeat is not None else None,
        query=query,
    )


class _Protocol(asyncio.Protocol):
    """Frames in and out; deliveries on the open channel are assembled inline."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self._buffer = bytearray()
        self.channel = 0
        # Each awaited reply: the method keys that answer it, and its future.
        self._replies: deque[tuple[frozenset[int], asyncio.Future[Method]]] = deque()
        self.on_delivery: DeliveryHandler | None = None
        # Methods nobody awaits that a caller takes (a publisher's basic.ack, nack, return);
        # it answers whether it took the method.
        self.on_method: Callable[[Method], bool] | None = None
        # Done (with the reason) once the channel or the connection is gone.
        self.closed: asyncio.Future[UpstreamClosed] = asyncio.get_running_loop().create_future()
        self.handshaking = True
        self.heard = True  # something arrived since the last heartbeat tick
        self.wrote = True  # something was sent since the last heartbeat tick
        # The delivery being assembled, which may span reads.
        self._tag = 0
        self._redelivered = False
        self._exchange = ""
        self._routing_key = ""
        self._header = b""
        self._body: list[bytes] = []
        self._body_left = 0
        self._expect = _EXPECT_METHOD
        self._returned = False  # the content being read is a basic.return's

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)

    def connection_lost(self, exc: Exception | None) -> None:
        self.fail(UpstreamClosed(0, f"connection lost: {exc}" if exc else "connection lost"))

    # The hot loop stays in one function: a call per frame would cost more than the parse.
    def data_received(self, data: bytes) -> None:
        self.heard = True
        buffer = self._buffer
        buffer += data
        length = len(buffer)
        position = 0
        channel_open = self.channel
        while length - position >= 8:
            kind, channel, size = _UNPACK_HEAD(buffer, position)
            if size > _MAX_FRAME:
                self._protocol_error(f"a frame of {size} bytes, above frame_max {_MAX_FRAME}")
                return
            end = position + 7 + size
            if end >= length:
                break
            if buffer[end] != FRAME_END:
                self._protocol_error("frame end octet missing")
                return
            start = position + 7
            position = end + 1
            if channel != channel_open and kind != FRAME_HEARTBEAT and channel:
                continue  # a channel closed earlier: its last frames mean nothing now
            if kind == FRAME_BODY:
                if self._expect != _EXPECT_BODY or size > self._body_left:
                    self._protocol_error("a body frame out of place")
                    return
                self._body.append(bytes(buffer[start:end]))
                self._body_left -= size
                if not self._body_left:
                    body = self._body
                    self._body = []
                    self._expect = _EXPECT_METHOD
                    self._delivered(body[0] if len(body) == 1 else b"".join(body))
            elif kind == FRAME_HEADER:
                if self._expect != _EXPECT_HEADER or size < 14:
                    self._protocol_error("a content header out of place")
                    return
                self._header = bytes(buffer[start:end])
                self._body_left = _UNPACK_Q(buffer, start + 4)[0]
                if self._body_left > _MAX_BODY:
                    self._protocol_error(f"a message of {self._body_left} bytes")
                    return
                self._expect = _EXPECT_BODY
                if not self._body_left:
                    self._expect = _EXPECT_METHOD
                    self._delivered(b"")
            elif kind == FRAME_METHOD:
                if self._expect != _EXPECT_METHOD or size < 4:
                    self._protocol_error("a method frame inside a message")
                    return
                if _UNPACK_I(buffer, start)[0] == _DELIVER:
                    try:
                        self._parse_deliver(buffer, start, end)
                    except (struct.error, IndexError, UnicodeDecodeError):
                        self._protocol_error("a malformed basic.deliver")
                        return
                    self._expect = _EXPECT_HEADER
                else:
                    self._method(channel, bytes(buffer[start:end]))
                    if _UNPACK_I(buffer, start)[0] == _RETURN:
                        # Its content follows; the method went to on_method, the body nowhere.
                        self._expect, self._returned = _EXPECT_HEADER, True
            elif kind != FRAME_HEARTBEAT:
                self._protocol_error(f"unexpected frame type {kind}")
                return
        del buffer[:position]

    def _parse_deliver(self, buffer: bytearray, start: int, end: int) -> None:
        """basic.deliver's fields, read in place (the consumer tag is skipped)."""
        offset = start + 5 + buffer[start + 4]  # past the consumer tag
        self._tag, redelivered = _UNPACK_QB(buffer, offset)
        self._redelivered = bool(redelivered & 1)
        offset += 10
        size = buffer[offset - 1]
        self._exchange = buffer[offset : offset + size].decode()
        offset += size + 1
        size = buffer[offset - 1]
        if offset + size > end:
            raise IndexError("basic.deliver runs past its frame")
        self._routing_key = buffer[offset : offset + size].decode()

    def _delivered(self, body: bytes) -> None:
        if self._returned:
            self._returned = False
            return
        handler = self.on_delivery
        if handler is not None:
            handler(
                self._tag, self._redelivered, self._exchange, self._routing_key, self._header, body
            )

    def _method(self, channel: int, payload: bytes) -> None:
        try:
            method = decode_method(payload)
        except Exception as error:  # noqa: BLE001 - an undecodable method ends the connection
            self._protocol_error(str(error))
            return
        key = (method.CLASS_ID << 16) | method.METHOD_ID
        if key == _CONNECTION_CLOSE:
            close = cast(m.ConnectionClose, method)
            self.write(method_frame(0, m.ConnectionCloseOk()))
            failure: Exception = UpstreamClosed(close.reply_code, close.reply_text)
            if self.handshaking and close.reply_code == _ACCESS_REFUSED:
                failure = AuthenticationFailed(close.reply_text)
            self.fail(UpstreamClosed(close.reply_code, close.reply_text), failure)
            if self.transport is not None:
                self.transport.close()
        elif key == _CHANNEL_CLOSE:
            channel_close = cast(m.ChannelClose, method)
            self.write(method_frame(channel, m.ChannelCloseOk()))
            self.channel = 0
            self._expect, self._body = _EXPECT_METHOD, []  # a message cut short stays unread
            self._returned = False
            self.fail(UpstreamClosed(channel_close.reply_code, channel_close.reply_text))
        elif key == _CANCEL:
            # The upstream queue went away (or was cancelled by an operator): start again.
            self.fail(UpstreamClosed(0, "consumer cancelled by the upstream"))
        elif self._replies and key in self._replies[0][0]:
            _keys, future = self._replies.popleft()
            if not future.done():
                future.set_result(method)
        elif (
            key in _IGNORED
            or key == _CONNECTION_CLOSE_OK
            or (self.on_method is not None and self.on_method(method))
        ):
            pass
        else:
            self._protocol_error(f"unexpected {method.NAME}")

    def _protocol_error(self, text: str) -> None:
        self.fail(UpstreamClosed(0, f"protocol error from the upstream: {text}"))
        if self.transport is not None:
            self.transport.close()

    def fail(self, closed: UpstreamClosed, failure: BaseException | None = None) -> None:
        """The channel (or everything) is gone: waiting callers get `failure` or `closed`."""
        if not self.closed.done():
            self.closed.set_result(closed)
        while self._replies:
            _keys, future = self._replies.popleft()
            if not future.done():
                future.set_exception(failure or closed)

    def expect(self, *methods: type[Method]) -> asyncio.Future[Method]:
        future: asyncio.Future[Method] = asyncio.get_running_loop().create_future()
        if self.closed.done():
            future.set_exception(self.closed.result())
        else:
            keys = frozenset((method.CLASS_ID << 16) | method.METHOD_ID for method in methods)
            self._replies.append((keys, future))
        return future

    def write(self, data: bytes) -> None:
        transport = self.transport
        if transport is not None and not transport.is_closing():
            self.wrote = True
            transport.write(data)


@functools.lru_cache(maxsize=1024)
def _publish_method(exchange: str, routing_key: str, mandatory: bool) -> bytes:
    """basic.publish's payload: a stream of messages mostly repeats a few destinations."""
    return m.BasicPublish(exchange=exchange, routing_key=routing_key, mandatory=mandatory).encode()


class UpstreamConnection:
    """One connection to an upstream broker, with one channel open at a time."""

    def __init__(self, protocol: _Protocol, server_properties: Mapping[str, Any]) -> None:
        self._protocol = protocol
        self.server_properties = server_properties
        self._next_channel = 1
        self._heartbeat: asyncio.TimerHandle | None = None
        self.frame_max = DEFAULT_FRAME_MAX  # as negotiated

    @classmethod
    async def open(cls, uri: str, connection_name: str, timeout: float) -> UpstreamConnection:
        endpoint = parse_uri(uri)
        loop = asyncio.get_running_loop()
        context = endpoint.ssl_context()
        async with asyncio.timeout(timeout):
            _transport, protocol = await loop.create_connection(
                _Protocol,
                endpoint.host,
                endpoint.port,
                ssl=context,
                server_hostname=endpoint.server_name if context is not None else None,
            )
            try:
                connection = await cls._handshake(protocol, endpoint, connection_name)
            except BaseException:
                if protocol.transport is not None:
                    protocol.transport.close()
                raise
        return connection

    @classmethod
    async def _handshake(
        cls, protocol: _Protocol, endpoint: Endpoint, name: str
    ) -> UpstreamConnection:
        start_future = protocol.expect(m.ConnectionStart)
        protocol.write(PROTOCOL_HEADER)
        start = cast(m.ConnectionStart, await start_future)
        mechanism = "EXTERNAL" if endpoint.external_auth else "PLAIN"
        if mechanism.encode() not in start.mechanisms.split():
            raise UpstreamClosed(0, f"the upstream does not offer the {mechanism} mechanism")
        client_properties = {
            "product": "Leveret",
            "connection_name": name,
            "capabilities": {
                "authentication_failure_close": True,
                "consumer_cancel_notify": True,
                "basic.nack": True,
                "connection.blocked": True,
            },
        }
        if endpoint.external_auth:
            credentials = b""  # the user is the one the client certificate names
        else:
            credentials = f"\0{endpoint.user}\0{endpoint.password}".encode()
        tune_future = protocol.expect(m.ConnectionTune)
        start_ok = m.ConnectionStartOk(client_properties, mechanism, credentials)
        protocol.write(method_frame(0, start_ok))
        try:
            tune = cast(m.ConnectionTune, await tune_future)
        except UpstreamClosed as closed:
            # A broker that does not announce authentication_failure_close drops the socket.
            raise AuthenticationFailed(closed.reply_text) from closed
        frame_max = min(tune.frame_max or DEFAULT_FRAME_MAX, DEFAULT_FRAME_MAX)
        heartbeat = tune.heartbeat if endpoint.heartbeat is None else endpoint.heartbeat
        protocol.write(method_frame(0, m.ConnectionTuneOk(tune.channel_max, frame_max, heartbeat)))
        opened = protocol.expect(m.ConnectionOpenOk)
        protocol.write(method_frame(0, m.ConnectionOpen(endpoint.vhost)))
        await opened
        protocol.handshaking = False
        connection = cls(protocol, start.server_properties)
        connection.frame_max = frame_max
        if heartbeat:
            connection._beat(heartbeat / 2, 0)
        await connection.open_channel()
        return connection

    def _beat(self, interval: float, silent: int) -> None:
        """Send a heartbeat when nothing else went out, give up when nothing came in."""
        protocol = self._protocol
        if protocol.transport is None or protocol.transport.is_closing():
            return
        silent = 0 if protocol.heard else silent + 1
        if silent > 2 * _MISSED_HEARTBEATS:  # ticks are half an interval
            protocol.fail(UpstreamClosed(0, "missed heartbeats from the upstream"))
            protocol.transport.abort()
            return
        if not protocol.wrote:
            protocol.write(HEARTBEAT_FRAME)
        protocol.heard = protocol.wrote = False
        self._heartbeat = asyncio.get_running_loop().call_later(
            interval, self._beat, interval, silent
        )

    @property
    def closed(self) -> asyncio.Future[UpstreamClosed]:
        """Done once the channel or the connection is gone; its result says why."""
        return self._protocol.closed

    async def open_channel(self) -> None:
        """Open a new channel (the one before was closed by the upstream)."""
        protocol = self._protocol
        if protocol.transport is None or protocol.transport.is_closing():
            raise UpstreamClosed(0, "connection lost")
        if protocol.closed.done():
            protocol.closed = asyncio.get_running_loop().create_future()
        number = self._next_channel
        self._next_channel += 1
        opened = protocol.expect(m.ChannelOpenOk)
        protocol.channel = number
        protocol.write(method_frame(number, m.ChannelOpen()))
        await opened

    async def _call(self, method: Method, *replies: type[Method]) -> Method:
        protocol = self._protocol
        future = protocol.expect(*replies)
        protocol.write(method_frame(protocol.channel, method))
        return await future

    async def queue_declare(
        self,
        queue: str,
        *,
        passive: bool = False,
        durable: bool = False,
        auto_delete: bool = False,
        arguments: Mapping[str, Any] | None = None,
    ) -> m.QueueDeclareOk:
        """Declare the queue (or with `passive`, check it exists: UpstreamClosed 404 if not,
        and the channel is closed); the reply carries its ready messages and consumers."""
        method = m.QueueDeclare(
            queue=queue,
            passive=passive,
            durable=durable,
            auto_delete=auto_delete,
            arguments=dict(arguments or {}),
        )
        return cast(m.QueueDeclareOk, await self._call(method, m.QueueDeclareOk))

    async def basic_qos(self, prefetch_count: int) -> None:
        await self._call(m.BasicQos(prefetch_count=prefetch_count), m.BasicQosOk)

    def basic_consume(
        self,
        queue: str,
        consumer_tag: str,
        *,
        no_ack: bool,
        arguments: Mapping[str, Any],
        on_delivery: DeliveryHandler,
    ) -> asyncio.Future[Method]:
        """Send basic.consume now (a caller that is not a task may start consuming); the
        future is done at consume-ok."""
        protocol = self._protocol
        protocol.on_delivery = on_delivery
        method = m.BasicConsume(
            queue=queue, consumer_tag=consumer_tag, no_ack=no_ack, arguments=dict(arguments)
        )
        future = protocol.expect(m.BasicConsumeOk)
        protocol.write(method_frame(protocol.channel, method))
        return future

    async def confirm_select(self, on_method: Callable[[Method], bool]) -> None:
        """Publisher confirms from now on: `on_method` takes the basic.ack, basic.nack and
        basic.return the upstream sends (and answers whether it took the method)."""
        self._protocol.on_method = on_method
        await self._call(m.ConfirmSelect(), m.ConfirmSelectOk)

    def publish(
        self, exchange: str, routing_key: str, header: bytes, body: bytes, mandatory: bool
    ) -> None:
        """One message (`header` is its content header payload) in one write."""
        protocol = self._protocol
        method = _publish_method(exchange, routing_key, mandatory)
        protocol.write(content_frames(protocol.channel, method, header, body, self.frame_max))

    async def basic_cancel(self, consumer_tag: str) -> None:
        # Deliveries sent before the cancel still arrive, and are taken, until cancel-ok.
        await self._call(m.BasicCancel(consumer_tag=consumer_tag), m.BasicCancelOk)

    def settle(self, settlements: list[tuple[int, bool]]) -> None:
        """One write of (delivery tag, taken) pairs: taken ones as a multiple basic.ack, the
        others as basic.nack with requeue."""
        channel = self._protocol.channel
        if not channel:
            return  # the channel is gone: the upstream requeues them itself
        frame = _ACK_FRAME
        self._protocol.write(
            b"".join(
                frame(FRAME_METHOD, channel, 13, 60, 80, tag, 1, FRAME_END)
                if taken
                else frame(FRAME_METHOD, channel, 13, 60, 120, tag, 2, FRAME_END)
                for tag, taken in settlements
            )
        )

    async def close(self, timeout: float = 2.0) -> None:
        if self._heartbeat is not None:
            self._heartbeat.cancel()
        protocol = self._protocol
        transport = protocol.transport
        if transport is None or transport.is_closing():
            return
        closed = protocol.expect(m.ConnectionCloseOk)
        protocol.write(method_frame(0, m.ConnectionClose(200, "Goodbye")))
        try:
            async with asyncio.timeout(timeout):
                await closed
        except (TimeoutError, UpstreamClosed, AuthenticationFailed):
            pass
        finally:
            transport.close()
