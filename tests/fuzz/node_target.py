"""Fuzz target: whole client connections on a real node run in this thread's event loop.

The node is complete (Raft metadata store, message stores, listeners); only the socket under
each fuzzed connection is replaced by an in-memory transport, so that an input costs
microseconds instead of a TCP round trip. The node's AMQPProtocol, Session and channels
handle the bytes exactly as they would from a socket.
"""

from __future__ import annotations

import asyncio
import struct
import tempfile
from typing import Any

from leveret.amqp.constants import FRAME_END, FRAME_METHOD, PROTOCOL_HEADER
from leveret.amqp.errors import MAX_REPLY_TEXT, ReplyCode
from leveret.amqp.methods import ChannelClose, ConnectionClose, decode_method
from leveret.clustering.plugin import ClusterPlugin
from leveret.config import Config
from leveret.server.node import Node
from leveret.server.protocol import AMQPProtocol
from leveret.session import open_sessions
from tests.fuzz.streams import chunks

# Largest message a fuzzed client may publish here: bounds what one input may make the node keep.
MAX_MESSAGE = 1 << 20
# Inputs after which the node is replaced by a fresh one, with what the inputs declared gone.
INPUTS_PER_NODE = 20000
# A definition change waits for the Raft log; an input waits at most this long for its turns.
SETTLE_SECONDS = 2.0


class LoopbackTransport(asyncio.Transport):
    """A socket whose peer reads everything at once: what the node writes is kept, bounded."""

    def __init__(self) -> None:
        super().__init__()
        self.written = bytearray()
        self.closed = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += data  # bounded by what one input can make the node send

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def is_reading(self) -> bool:
        return not self.closed

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 50000) if name == "peername" else default


class EscapedError(AssertionError):
    """An exception left the node's error mapper (it reached the event loop)."""


class NodeTarget:
    """Runs fuzz inputs as client connections on a node of its own."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.loop.set_exception_handler(self._escaped)
        self._escapes: list[dict[str, Any]] = []
        self._node: Node | None = None
        self._data_dir: tempfile.TemporaryDirectory[str] | None = None
        self._inputs = 0

    def _escaped(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        self._escapes.append(context)

    def _fresh_node(self) -> Node:
        if self._node is not None:
            self.stop()
        self._data_dir = tempfile.TemporaryDirectory(prefix="leveret-fuzz-")
        config = Config(
            node_name="fuzz@localhost",
            bind="127.0.0.1",
            amqp_port=0,
            mgmt_port=0,
            cluster_port=0,
            data_dir=self._data_dir.name,
            max_message_size=MAX_MESSAGE,
            log_level="error",
        )
        node = Node(config, clustering=ClusterPlugin)
        self.loop.run_until_complete(node.start())
        self._node = node
        return node

    def stop(self) -> None:
        if self._node is not None:
            self.loop.run_until_complete(self._node.stop())
            self._node = None
        if self._data_dir is not None:
            self._data_dir.cleanup()
            self._data_dir = None

    def close(self) -> None:
        self.stop()
        self.loop.close()

    def run(self, data: bytes) -> bytes:
        """One input as one connection; returns what the node wrote. Raises on a bug."""
        if self._node is None or self._inputs >= INPUTS_PER_NODE:
            self._fresh_node()
            self._inputs = 0
        self._inputs += 1
        transport = self.loop.run_until_complete(self._connection(data))
        if self._escapes:
            context = self._escapes[0]
            self._escapes.clear()
            raise EscapedError(context.get("message")) from context.get("exception")
        _check_output(bytes(transport.written))
        return bytes(transport.written)

    async def _connection(self, data: bytes) -> LoopbackTransport:
        assert self._node is not None
        broker = self._node.broker
        transport = LoopbackTransport()
        protocol = AMQPProtocol(broker)
        protocol.connection_made(transport)
        for chunk in chunks(data):
            if transport.closed:
                break
            protocol.data_received(chunk)
            await self._settle(protocol)
        protocol.connection_lost(None)
        await self._settle(protocol)
        session = protocol.session
        assert session is not None and session not in open_sessions(broker)
        return transport

    async def _settle(self, protocol: AMQPProtocol) -> None:
        """Run the loop until the connection has nothing left to do now (bounded): the harness
        waits on the very flags the protocol and the session schedule their work by."""
        deadline = self.loop.time() + SETTLE_SECONDS
        for _ in range(10000):
            await asyncio.sleep(0)
            session = protocol.session
            busy = protocol._turn_pending or protocol._flush_scheduled
            waiting = session is not None and session._waiting
            if not (busy or waiting) or self.loop.time() > deadline:
                return


def _check_output(written: bytes) -> None:
    """What the node sends is well-formed AMQP (whole frames, each with its end marker), and
    its closes carry valid codes and texts."""
    if written.startswith(b"AMQP"):
        assert written == PROTOCOL_HEADER, written[:64]  # a refused header: the header, no more
        return
    offset = 0
    while offset < len(written):
        kind, _, size = struct.unpack_from(">BHI", written, offset)
        end = offset + 7 + size
        assert written[end] == FRAME_END, written[offset : offset + 64]
        if kind == FRAME_METHOD:
            method = decode_method(written[offset + 7 : end])
            if isinstance(method, ConnectionClose | ChannelClose):
                assert method.reply_code in ReplyCode.__members__.values(), method
                assert len(method.reply_text.encode("utf-8")) <= MAX_REPLY_TEXT
        offset = end + 1
