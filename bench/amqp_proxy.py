"""A TCP proxy in front of an AMQP broker that counts the methods its clients send."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import Counter

from bench import wire

BASIC_CONSUME = 0x003C0014
BASIC_CANCEL = 0x003C001E


class MethodCounter:
    """Counts the method frames of one client's byte stream, fed as it arrives (sans-IO).

    Frames may be split across reads, and several may arrive in one; only the 8-byte protocol
    header at the start and whole frames are consumed, the rest waits for the next feed.
    """

    def __init__(self, methods: Counter[int] | None = None) -> None:
        # (class id << 16 | method id) -> count; several streams may share one tally.
        self.methods: Counter[int] = methods if methods is not None else Counter()
        self._buffer = bytearray()
        self._header_seen = False

    def feed(self, data: bytes) -> None:
        buffer = self._buffer
        buffer += data
        position = 0
        if not self._header_seen:
            if len(buffer) < len(wire.PROTOCOL_HEADER):
                return
            position, self._header_seen = len(wire.PROTOCOL_HEADER), True
        while len(buffer) - position >= wire.FRAME_HEADER_SIZE + 1:
            frame_type, _channel, size = wire.FRAME_PREFIX.unpack_from(buffer, position)
            end = position + wire.FRAME_HEADER_SIZE + size
            if end >= len(buffer):
                break
            if buffer[end] != wire.FRAME_END:
                raise ValueError(f"frame end octet missing at offset {end}")
            if frame_type == wire.FRAME_METHOD and size >= 4:
                (method,) = wire.METHOD_ID.unpack_from(buffer, position + wire.FRAME_HEADER_SIZE)
                self.methods[method] += 1
            position = end + 1
        del buffer[:position]


class CountingProxy:
    """Listens on a loopback port and forwards each connection to `target_port`; the methods
    every client sends are added to `methods`. Runs its own event loop in a thread, so that the
    caller may block (publishing, waiting on HTTP) while links keep flowing through it."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = 0
        self.methods: Counter[int] = Counter()
        self.errors: list[BaseException] = []  # a stream it could not parse: counts are wrong
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.base_events.Server | None = None
        self._pipes: set[asyncio.Task[None]] = set()

    def start(self) -> CountingProxy:
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(self._listen(), self._loop)
        self.port = future.result(10)
        return self

    def count(self, method: int) -> int:
        # Counter.__getitem__ on a missing key does not insert: safe beside the loop's thread.
        return self.methods[method]

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    async def _listen(self) -> int:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        return int(self._server.sockets[0].getsockname()[1])

    async def _close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._pipes):
            task.cancel()
        await asyncio.gather(*self._pipes, return_exceptions=True)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.close()
            return
        pipes = [
            asyncio.ensure_future(_pipe(reader, up_writer, MethodCounter(self.methods))),
            asyncio.ensure_future(_pipe(up_reader, writer, None)),
        ]
        self._pipes.update(pipes)
        try:
            # Either side closing ends the connection, as it would without the proxy.
            done, _ = await asyncio.wait(pipes, return_when=asyncio.FIRST_COMPLETED)
            found = [task.exception() for task in done if not task.cancelled()]
            self.errors += [error for error in found if error is not None]
        finally:
            for task in pipes:
                task.cancel()
                self._pipes.discard(task)
            for stream in (writer, up_writer):
                stream.close()


async def _pipe(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    counter: MethodCounter | None,
) -> None:
    with contextlib.suppress(ConnectionError):
        while data := await reader.read(65536):
            if counter is not None:
                counter.feed(data)
            writer.write(data)
            await writer.drain()
