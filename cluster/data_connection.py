"""Data connections between nodes: one TCP stream per pair, batches of frames both ways.

The queue data plane (proto/queues.proto, ToHome and FromHome) runs on plain asyncio TCP rather
than a gRPC stream because each `await call.write()` of grpc.aio cost 150-550 µs and a one-hop
round trip about 300 µs, which made a message through a hop slower than through RabbitMQ.
Here a sender's whole batch is one protobuf serialization and one `transport.write`.

The accepting node speaks first with a fresh nonce; the connecting node answers with the
credentials a gRPC call between nodes carries (cluster/secret.py), signed for that nonce, and
nothing but that answer is read before the accepting node has checked it. Both sides send an
empty frame when they have said nothing for a while, and end a connection that stays silent
(a node stopped or cut off), as gRPC's keepalive pings did.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import ssl
from collections.abc import Callable
from typing import Any, Protocol, cast

from cluster.frames import FrameError, FrameReader, Parser
from cluster.secret import ADDRESS_KEY, AUTH_KEY, NODE_KEY, Caller, CallSigner, CallVerifier
from cluster.transport import MAX_MESSAGE_BYTES, LogThrottle
from proto import queues_pb2

log = logging.getLogger(__name__)

# What the credentials of a connection are signed for, with the accepting side's nonce after it.
DATA_PATH = "/leveret.queues.Queues/Data"
MAX_FRAME_BYTES = MAX_MESSAGE_BYTES
# Until a peer has proved it knows the secret, it can make this node hold no more than this.
HANDSHAKE_FRAME_BYTES = 4096
HANDSHAKE_SECONDS = 5.0
# ...and no more than this many connections may be waiting to prove it at once.
MAX_HANDSHAKES = 64
# An empty frame goes out after this long without output; a connection that brought nothing
# for SILENT_SECONDS is dead (gRPC's keepalive found that within 2 + 3 s).
HEARTBEAT_SECONDS = 1.0
SILENT_SECONDS = 5.0
# Output the transport holds beyond which the owner stops writing until it drains: a batch
# keeps growing meanwhile (and a link holds its publishers back once it is large).
WRITE_HIGH_BYTES = 1 << 20
WRITE_LOW_BYTES = 256 << 10

# The fields of ToHome and FromHome.
_DATA = 1
_HELLO = _CHALLENGE = 2
_VERDICT = 3
_EMPTY_FRAME = bytes([_DATA << 3 | 2, 0])


class DataRefused(Exception):
    """The other node refused this node's credentials (it has another cluster secret)."""


class Receiver(Protocol):
    """What a data connection tells its owner."""

    def received(self, message: Any) -> None:
        """A data frame: an Up on the accepting side, a Down on the connecting one."""

    def writable(self) -> None:
        """The transport drained: output held back may go now."""

    def read_taken(self) -> None:
        """Every whole frame of one read has been handed over (what they produced may go)."""

    def ended(self) -> None:
        """The connection is gone (closed by either side, or broken)."""


class DataConnection(asyncio.Protocol):
    """One end of a data connection; the two subclasses below do the two handshakes."""

    def __init__(self, parsers: dict[int, Parser]) -> None:
        self.peer = ""  # the other node's name, once known
        self.can_write = True
        self._reader = FrameReader(HANDSHAKE_FRAME_BYTES, parsers)
        self._transport: asyncio.Transport | None = None
        self._receiver: Receiver | None = None
        self._reading_paused = False
        self._loop = asyncio.get_running_loop()
        self._closed: asyncio.Future[None] = self._loop.create_future()
        self._heard_at = self._loop.time()
        self._wrote = False
        self._heartbeat: asyncio.TimerHandle | None = None

    # --- for the owner ------------------------------------------------------------------------

    @property
    def is_open(self) -> bool:
        return self._transport is not None and not self._transport.is_closing()

    def write(self, data: bytes) -> None:
        """Send serialized frames (a whole ToHome or FromHome); never waits."""
        if self._transport is not None:
            self._wrote = True
            self._transport.write(data)

    def pause_reading(self) -> None:
        """Read nothing more until `resume_reading` (TCP's flow control holds the peer back)."""
        if not self._reading_paused and self._transport is not None:
            self._reading_paused = True
            self._transport.pause_reading()

    def resume_reading(self) -> None:
        if self._reading_paused and self._transport is not None:
            self._reading_paused = False
            self._heard_at = self._loop.time()
            self._transport.resume_reading()
            self._loop.call_soon(self._take_frames)  # those read before the pause

    def close(self) -> None:
        """End the connection once what was written has gone."""
        if self._transport is not None:
            self._transport.close()

    def abort(self, reason: str) -> None:
        """End the connection now: the peer broke the protocol, or went silent."""
        if self._transport is not None and not self._transport.is_closing():
            log.warning("closing the data connection with %s: %s", self.peer or "a peer", reason)
            self._transport.abort()

    async def wait_closed(self) -> None:
        await asyncio.shield(self._closed)

    # --- asyncio.Protocol ---------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # (uvloop's transports are not asyncio.Transport subclasses, but do all it does)
        transport = cast(asyncio.Transport, transport)
        self._transport = transport
        transport.set_write_buffer_limits(WRITE_HIGH_BYTES, WRITE_LOW_BYTES)
        self._heartbeat = self._loop.call_later(HEARTBEAT_SECONDS, self._beat)

    def data_received(self, data: bytes) -> None:
        self._heard_at = self._loop.time()
        self._reader.feed(data)
        self._take_frames()
        if self._receiver is not None:
            self._receiver.read_taken()

    def _take_frames(self) -> None:
        reader = self._reader
        try:
            while not self._reading_paused and self.is_open:
                frame = reader.next_frame()
                if frame is None:
                    return
                self._frame(*frame)
        except FrameError as error:
            self.abort(str(error))

    def pause_writing(self) -> None:
        self.can_write = False

    def resume_writing(self) -> None:
        self.can_write = True
        if self._receiver is not None:
            self._receiver.writable()

    def connection_lost(self, exc: Exception | None) -> None:
        self._transport = None
        self.can_write = False
        if self._heartbeat is not None:
            self._heartbeat.cancel()
        if not self._closed.done():
            self._closed.set_result(None)
        receiver, self._receiver = self._receiver, None
        if receiver is not None:
            receiver.ended()

    # --- inside -------------------------------------------------------------------------------

    def _frame(self, field: int, message: Any) -> None:
        raise NotImplementedError

    def _ready(self, receiver: Receiver, data: Parser) -> None:
        """The handshake is over: data frames may be large now, and go to `receiver`."""
        self._receiver = receiver
        self._reader.expect(MAX_FRAME_BYTES, {_DATA: data})

    def _beat(self) -> None:
        if self._transport is None:
            return
        now = self._loop.time()
        if not self._reading_paused and now - self._heard_at > SILENT_SECONDS:
            self.abort(f"nothing heard for {now - self._heard_at:.1f}s")
            return
        if not self._wrote and self._receiver is not None:
            self._transport.write(_EMPTY_FRAME)
        self._wrote = False
        self._heartbeat = self._loop.call_later(HEARTBEAT_SECONDS, self._beat)


# --- the accepting side ---------------------------------------------------------------------

# Makes the owner of a connection a peer opened and proved itself on.
Accept = Callable[[Caller, DataConnection], Receiver]


class _Handshakes:
    """How many accepted connections have not proved themselves yet: each is small and brief
    (HANDSHAKE_FRAME_BYTES, HANDSHAKE_SECONDS), and their number is bounded too, so a flood of
    unauthenticated connections cannot take a node's file descriptors or memory."""

    def __init__(self) -> None:
        self.limit = MAX_HANDSHAKES
        self.pending = 0


class _Accepted(DataConnection):
    def __init__(
        self,
        verifier: CallVerifier,
        accept: Accept,
        throttle: LogThrottle,
        handshakes: _Handshakes,
    ) -> None:
        super().__init__({_HELLO: queues_pb2.Hello.FromString})
        self._verifier = verifier
        self._accept = accept
        self._throttle = throttle
        self._handshakes = handshakes
        self._in_handshake = False
        self._nonce = secrets.token_hex(16)
        self._deadline: asyncio.TimerHandle | None = None

    def _end_handshake(self) -> None:
        if self._in_handshake:
            self._in_handshake = False
            self._handshakes.pending -= 1

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        handshakes = self._handshakes
        if handshakes.pending >= handshakes.limit:
            if self._throttle.allows("handshakes"):
                log.warning(
                    "refusing data connections: %d already wait to authenticate", handshakes.limit
                )
            cast(asyncio.Transport, transport).abort()
            return
        handshakes.pending += 1
        self._in_handshake = True
        challenge = queues_pb2.FromHome(challenge=queues_pb2.Challenge(nonce=self._nonce))
        self.write(challenge.SerializeToString())
        self._deadline = self._loop.call_later(
            HANDSHAKE_SECONDS, self.abort, "no credentials in time"
        )

    def connection_lost(self, exc: Exception | None) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._end_handshake()
        super().connection_lost(exc)

    def _frame(self, field: int, message: Any) -> None:
        if self._receiver is not None:
            self._receiver.received(message)
            return
        # The first frame, and the only one a Hello may be in.
        self._end_handshake()
        verdict = self._verifier.verify(
            f"{DATA_PATH}/{self._nonce}",
            ((NODE_KEY, message.node), (ADDRESS_KEY, message.address), (AUTH_KEY, message.auth)),
        )
        if self._deadline is not None:
            self._deadline.cancel()
        if not isinstance(verdict, Caller):
            self._refuse(message.node, verdict)
            return
        self.peer = verdict.node
        self.write(queues_pb2.FromHome(verdict=queues_pb2.Verdict()).SerializeToString())
        self._ready(self._accept(verdict, self), queues_pb2.Up.FromString)

    def _refuse(self, node: str, reason: str) -> None:
        peer = self._transport.get_extra_info("peername") if self._transport else None
        if self._throttle.allows(f"{peer}:{reason}"):
            log.warning(
                "refused a data connection from %s (says it is %r): %s (every node of a cluster "
                "needs the same cluster secret, see --cluster-secret-file)",
                peer,
                node,
                reason,
            )
        self._reader.expect(HANDSHAKE_FRAME_BYTES, {})
        verdict = queues_pb2.Verdict(refused=f"cluster authentication failed: {reason}")
        self.write(queues_pb2.FromHome(verdict=verdict).SerializeToString())
        self.close()


async def serve_data(
    bind: str, port: int, verifier: CallVerifier, accept: Accept, tls: ssl.SSLContext | None
) -> asyncio.Server:
    """Accept data connections on bind:port (0: any free port); `accept` is called for each
    that proved it knows the cluster secret."""
    throttle, handshakes = LogThrottle(), _Handshakes()
    return await asyncio.get_running_loop().create_server(
        lambda: _Accepted(verifier, accept, throttle, handshakes),
        bind or None,
        port,
        ssl=tls,
        reuse_address=True,
    )


# --- the connecting side --------------------------------------------------------------------


class _Opened(DataConnection):
    def __init__(self, node: str, signer: CallSigner, receiver: Receiver) -> None:
        super().__init__({_CHALLENGE: queues_pb2.Challenge.FromString})
        self.peer = node
        self._signer = signer
        self._owner = receiver
        self.accepted: asyncio.Future[None] = self._loop.create_future()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.accepted.done():
            self.accepted.set_exception(ConnectionError("the connection closed in the handshake"))
        super().connection_lost(exc)

    def _frame(self, field: int, message: Any) -> None:
        if self._receiver is not None:
            self._receiver.received(message)
        elif field == _CHALLENGE:
            values = dict(self._signer.metadata(f"{DATA_PATH}/{message.nonce}"))
            hello = queues_pb2.Hello(
                node=values[NODE_KEY], address=values[ADDRESS_KEY], auth=values[AUTH_KEY]
            )
            self.write(queues_pb2.ToHome(hello=hello).SerializeToString())
            self._reader.expect(HANDSHAKE_FRAME_BYTES, {_VERDICT: queues_pb2.Verdict.FromString})
        elif message.refused:
            self.accepted.set_exception(DataRefused(message.refused))
            self.close()
        else:
            self._ready(self._owner, queues_pb2.Down.FromString)
            self.accepted.set_result(None)


async def open_data(
    node: str,
    host: str,
    port: int,
    signer: CallSigner,
    receiver: Receiver,
    tls: ssl.SSLContext | None,
    timeout: float,
) -> DataConnection:
    """A data connection to node `node` at host:port, its handshake done; `receiver` gets what
    comes on it. Raises DataRefused, OSError or TimeoutError."""
    loop = asyncio.get_running_loop()
    async with asyncio.timeout(timeout):
        _, connection = await loop.create_connection(
            lambda: _Opened(node, signer, receiver),
            host,
            port,
            ssl=tls,
            server_hostname=host if tls is not None else None,
        )
        try:
            await connection.accepted
        except BaseException:
            connection.abort("the handshake did not finish")
            raise
    return connection
