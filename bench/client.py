"""A minimal asyncio AMQP 0-9-1 client for the load generator: one channel, batched writes, a fast
parse of deliveries and confirms."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, TypeVar, cast

from bench import wire
from federation.client import Endpoint, parse_uri

_T = TypeVar("_T")

CHANNEL = 1
_CLIENT_FRAME_MAX = 131072
_STAMP_BYTES = 8
NO_STAMP = -1
_STAMP_PENDING = -2

# Called once per read with (receive time in ns, delivery tags, send stamps; NO_STAMP marks a body
# too short to carry one), so per-message work stays inside one tight parse loop.
DeliveryHandler = Callable[[int, list[int], list[int]], None]
# Called per confirm frame with (delivery tag, multiple, negative acknowledgement).
ConfirmHandler = Callable[[int, bool, bool], None]


class AMQPClosed(Exception):
    """The broker closed the channel or connection (reply code and text), or the socket dropped."""

    def __init__(self, reply_code: int, reply_text: str) -> None:
        super().__init__(f"{reply_code} {reply_text}")
        self.reply_code = reply_code
        self.reply_text = reply_text


class _Protocol(asyncio.Protocol):
    """Frame parser and writer; hot frames (deliver, header, body, ack, nack) are parsed inline."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self._buffer = bytearray()
        # Each awaited reply: the method ids that answer it (basic.get has two), and its future.
        self._replies: deque[tuple[tuple[int, ...], asyncio.Future[bytes]]] = deque()
        self._writable = asyncio.Event()
        self._writable.set()
        self.closed: AMQPClosed | None = None
        self.closed_event = asyncio.Event()
        self.on_deliveries: DeliveryHandler | None = None
        self.on_confirm: ConfirmHandler | None = None
        self.returned = 0
        self.blocked = False
        self.consumer_cancelled = False
        # The delivery whose frames are still arriving: its tag, stamp, and body bytes left.
        self._tag = 0
        self._stamp = NO_STAMP
        self._body_left = 0

    # -- asyncio callbacks -------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement asyncio.Transport without subclassing it.
        self.transport = cast(asyncio.Transport, transport)

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(AMQPClosed(0, f"connection lost: {exc}" if exc else "connection lost"))
        self._writable.set()

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    # The hot loop stays in one function: a call per frame would cost more than the parse itself.
    def data_received(self, data: bytes) -> None:
        buffer = self._buffer
        buffer += data
        length = len(buffer)
        position = 0
        unpack_prefix = wire.FRAME_PREFIX.unpack_from
        unpack_method = wire.METHOD_ID.unpack_from
        unpack_u64 = wire.UINT64.unpack_from
        # The delivery being assembled may span reads, so its state lives on self between calls.
        tag, stamp, body_left = self._tag, self._stamp, self._body_left
        tags: list[int] = []
        stamps: list[int] = []
        while length - position >= 8:
            frame_type, channel, size = unpack_prefix(buffer, position)
            end = position + 7 + size
            if end >= length:
                break
            payload = position + 7
            if frame_type == wire.FRAME_BODY:
                if stamp == _STAMP_PENDING:
                    stamp = unpack_u64(buffer, payload)[0] if size >= _STAMP_BYTES else NO_STAMP
                body_left -= size
                if body_left <= 0:
                    tags.append(tag)
                    stamps.append(stamp)
            elif frame_type == wire.FRAME_METHOD:
                (method_id,) = unpack_method(buffer, payload)
                if method_id == wire.BASIC_DELIVER:
                    tag = unpack_u64(buffer, payload + 5 + buffer[payload + 4])[0]
                    stamp = _STAMP_PENDING
                elif method_id == wire.BASIC_ACK or method_id == wire.BASIC_NACK:
                    if self.on_confirm is not None:
                        self.on_confirm(
                            unpack_u64(buffer, payload + 4)[0],
                            bool(buffer[payload + 12] & 1),
                            method_id == wire.BASIC_NACK,
                        )
                else:
                    self._on_method(channel, method_id, bytes(buffer[payload:end]))
            elif frame_type == wire.FRAME_HEADER:
                body_left = unpack_u64(buffer, payload + 4)[0]
                if body_left == 0:  # no body frame follows
                    tags.append(tag)
                    stamps.append(NO_STAMP)
            elif frame_type != wire.FRAME_HEARTBEAT:
                self._fail(AMQPClosed(505, f"unexpected frame type {frame_type}"))
                return
            if buffer[end] != wire.FRAME_END:
                self._fail(AMQPClosed(501, "frame end octet missing"))
                return
            position = end + 1
        del buffer[:position]
        self._tag, self._stamp, self._body_left = tag, stamp, body_left
        if tags and self.on_deliveries is not None:
            self.on_deliveries(time.monotonic_ns(), tags, stamps)

    # -- slow path ---------------------------------------------------------------------------
    def _on_method(self, channel: int, method_id: int, payload: bytes) -> None:
        if method_id == wire.CONNECTION_CLOSE or method_id == wire.CHANNEL_CLOSE:
            reader = wire.Reader(payload, 4)
            code, text = reader.short(), reader.shortstr()
            if channel == 0:
                self.write(wire.connection_close_ok())
            else:
                self.write(wire.channel_close_ok(channel))
            self._fail(AMQPClosed(code, text))
        elif method_id == wire.BASIC_RETURN:
            self.returned += 1
        elif method_id == wire.BASIC_CANCEL:
            self.consumer_cancelled = True
        elif method_id == wire.CONNECTION_BLOCKED:
            self.blocked = True
        elif method_id == wire.CONNECTION_UNBLOCKED:
            self.blocked = False
        elif self._replies and method_id in self._replies[0][0]:
            _expected, future = self._replies.popleft()
            if not future.done():
                future.set_result(payload)
        elif method_id == wire.CONNECTION_CLOSE_OK:
            self.closed_event.set()

    def _fail(self, error: AMQPClosed) -> None:
        if self.closed is None:
            self.closed = error
        while self._replies:
            _expected, future = self._replies.popleft()
            if not future.done():
                future.set_exception(error)
        self.closed_event.set()

    def expect(self, *method_ids: int) -> asyncio.Future[bytes]:
        """A future for the next reply that is one of `method_ids`: its payload, method id first."""
        future: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        if self.closed is not None:
            future.set_exception(self.closed)
        else:
            self._replies.append((method_ids, future))
        return future

    def write(self, data: bytes) -> None:
        assert self.transport is not None
        if not self.transport.is_closing():
            self.transport.write(data)

    async def wait_writable(self) -> None:
        await self._writable.wait()


class Connection:
    """One AMQP connection with one open channel (channel 1), as each generator role uses."""

    def __init__(
        self,
        protocol: _Protocol,
        server_properties: dict[str, Any],
        frame_max: int,
    ) -> None:
        self._protocol = protocol
        self.server_properties = server_properties
        self.frame_max = frame_max

    @classmethod
    async def open(
        cls,
        uri: str,
        connection_name: str = "leveret-bench",
        timeout: float = 30.0,
    ) -> Connection:
        endpoint = parse_uri(uri)
        loop = asyncio.get_running_loop()
        context = endpoint.ssl_context()  # amqps://...?cacertfile=...: TLS, as the federation's
        _transport, protocol = await asyncio.wait_for(
            loop.create_connection(
                _Protocol,
                endpoint.host,
                endpoint.port,
                ssl=context,
                server_hostname=endpoint.server_name if context is not None else None,
            ),
            timeout,
        )
        return await asyncio.wait_for(cls._handshake(protocol, endpoint, connection_name), timeout)

    @classmethod
    async def _handshake(cls, protocol: _Protocol, endpoint: Endpoint, name: str) -> Connection:
        start = protocol.expect(wire.CONNECTION_START)
        protocol.write(wire.PROTOCOL_HEADER)
        reader = wire.Reader(await start, 4)
        reader.octet(), reader.octet()
        server_properties = reader.table()
        tune = protocol.expect(wire.CONNECTION_TUNE)
        capabilities = {
            "publisher_confirms": True,
            "consumer_cancel_notify": True,
            "basic.nack": True,
            "connection.blocked": True,
        }
        client_properties = {
            "product": "leveret-bench",
            "connection_name": name,
            "capabilities": capabilities,
        }
        protocol.write(wire.start_ok(endpoint.user, endpoint.password, client_properties))
        reader = wire.Reader(await tune, 4)
        channel_max, frame_max, _heartbeat = reader.short(), reader.long(), reader.short()
        frame_max = min(frame_max, _CLIENT_FRAME_MAX) if frame_max else _CLIENT_FRAME_MAX
        # Heartbeats off: a saturated benchmark must not be dropped for a late heartbeat.
        protocol.write(wire.tune_ok(channel_max or 2047, frame_max, 0))
        opened = protocol.expect(wire.CONNECTION_OPEN_OK)
        protocol.write(wire.connection_open(endpoint.vhost))
        await opened
        channel = protocol.expect(wire.CHANNEL_OPEN_OK)
        protocol.write(wire.channel_open(CHANNEL))
        await channel
        return cls(protocol, server_properties, frame_max)

    async def _call(self, frame: bytes, reply: int) -> wire.Reader:
        future = self._protocol.expect(reply)
        self._protocol.write(frame)
        return wire.Reader(await future, 4)

    async def exchange_declare(self, exchange: str, kind: str, *, durable: bool = False) -> None:
        frame = wire.exchange_declare(CHANNEL, exchange, kind, durable=durable)
        await self._call(frame, wire.EXCHANGE_DECLARE_OK)

    async def exchange_delete(self, exchange: str) -> None:
        await self._call(wire.exchange_delete(CHANNEL, exchange), wire.EXCHANGE_DELETE_OK)

    async def queue_declare(
        self,
        queue: str,
        *,
        durable: bool = False,
        exclusive: bool = False,
        auto_delete: bool = False,
        arguments: Mapping[str, Any] | None = None,
        passive: bool = False,
    ) -> tuple[str, int, int]:
        """Declare (or with `passive`, look up) a queue: (name, message count, consumer count)."""
        frame = wire.queue_declare(
            CHANNEL,
            queue,
            durable=durable,
            exclusive=exclusive,
            auto_delete=auto_delete,
            arguments=arguments or {},
            passive=passive,
        )
        reader = await self._call(frame, wire.QUEUE_DECLARE_OK)
        return reader.shortstr(), reader.long(), reader.long()

    async def queue_bind(self, queue: str, exchange: str, routing_key: str) -> None:
        frame = wire.queue_bind(CHANNEL, queue, exchange, routing_key)
        await self._call(frame, wire.QUEUE_BIND_OK)

    async def queue_purge(self, queue: str) -> int:
        reader = await self._call(wire.queue_purge(CHANNEL, queue), wire.QUEUE_PURGE_OK)
        return reader.long()

    async def queue_delete(self, queue: str) -> int:
        reader = await self._call(wire.queue_delete(CHANNEL, queue), wire.QUEUE_DELETE_OK)
        return reader.long()

    async def basic_get(self, queue: str) -> bool:
        """basic.get with auto-ack: whether a message came (its content frames are skipped)."""
        future = self._protocol.expect(wire.BASIC_GET_OK, wire.BASIC_GET_EMPTY)
        self._protocol.write(wire.basic_get(CHANNEL, queue, no_ack=True))
        payload = await future
        return wire.METHOD_ID.unpack_from(payload)[0] == wire.BASIC_GET_OK

    async def basic_qos(self, prefetch_count: int) -> None:
        await self._call(wire.basic_qos(CHANNEL, prefetch_count), wire.BASIC_QOS_OK)

    async def confirm_select(self, on_confirm: ConfirmHandler) -> None:
        self._protocol.on_confirm = on_confirm
        await self._call(wire.confirm_select(CHANNEL), wire.CONFIRM_SELECT_OK)

    async def basic_consume(
        self,
        queue: str,
        consumer_tag: str,
        *,
        no_ack: bool,
        on_deliveries: DeliveryHandler,
    ) -> None:
        self._protocol.on_deliveries = on_deliveries
        await self._call(
            wire.basic_consume(CHANNEL, queue, consumer_tag, no_ack=no_ack), wire.BASIC_CONSUME_OK
        )

    def write(self, data: bytes) -> None:
        """Send raw frames (batches of publishes or acks) without waiting."""
        self._protocol.write(data)

    async def wait_writable(self) -> None:
        """Wait until the socket buffer drains below the transport's high-water mark."""
        await self._protocol.wait_writable()

    @property
    def error(self) -> AMQPClosed | None:
        return self._protocol.closed

    @property
    def closed_event(self) -> asyncio.Event:
        """Set once the broker closed the connection or channel, or the socket dropped."""
        return self._protocol.closed_event

    @property
    def returned(self) -> int:
        return self._protocol.returned

    @property
    def consumer_cancelled(self) -> bool:
        return self._protocol.consumer_cancelled

    def stop_handlers(self) -> None:
        """Stop counting deliveries and confirms (the measured window is over)."""
        self._protocol.on_deliveries = None
        self._protocol.on_confirm = None

    async def close(self, timeout: float = 5.0) -> None:
        protocol = self._protocol
        if protocol.closed is None and protocol.transport is not None:
            protocol.write(wire.connection_close())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(protocol.closed_event.wait(), timeout)
        if protocol.transport is not None:
            protocol.transport.close()


def run(coroutine: Coroutine[Any, Any, _T]) -> _T:
    """Run a coroutine on uvloop when it is installed (it reads and writes faster), else asyncio."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coroutine)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(coroutine)
