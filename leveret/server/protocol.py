"""The thin asyncio layer of one AMQP connection: socket bytes in, writes batched per loop pass."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, cast

from ..amqp.frames import HEARTBEAT_FRAME
from ..session import Session
from ..tls_peer import describe
from .admission import Admission, reset_transport

if TYPE_CHECKING:
    from ..broker import Broker

log = logging.getLogger(__name__)

# How long a client may take to answer our connection.close before the socket is dropped.
CLOSE_GRACE_SECONDS = 1.0
# After our connection.close-ok the client closes the socket, as with RabbitMQ, which drops it
# itself after the heartbeat timeout, or 30 s at most (rabbit_reader's CLOSING_TIMEOUT).
CLOSED_LINGER_SECONDS = 30.0
SILENT_CLOSE_SECONDS = 3.0
HIGH_WATER = 1 << 20
LOW_WATER = 1 << 18
# Frames handled per event-loop turn for one connection. A publisher's 256 KiB read holds
# thousands of frames; handling them in slices lets consumers' acks and deliveries interleave.
FRAMES_PER_TURN = 300
# A publisher to a queue whose consumers fall behind gets a tenth of that: on an idle node turns
# come quickly and it hardly slows down; on a saturated one the consumers' acks get the time.
CONGESTED_FRAMES_PER_TURN = 30
# Bytes a connection waiting for admission may have sent: uvloop reads a new socket once even
# when it is paused at once, and a client that sends more than a protocol header before the
# node has spoken is no client.
HELD_BYTES_LIMIT = 4096


class AMQPProtocol(asyncio.Protocol):
    """Owns the socket. Output is gathered and written once per event-loop pass."""

    def __init__(
        self, broker: Broker, admission: Admission | None = None, *, admitted: bool = False
    ) -> None:
        self.broker = broker
        self.admission = admission
        self._admitted = admitted  # by the TLS listener, before its handshake
        self._address = ""
        self._held = False  # waiting for admission: not read until admitted
        self._held_data: list[bytes] = []  # read before the pause took hold
        self._bytes_seen = False
        self._handshake_expired = False
        self.loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        self.session: Session | None = None
        self._out: list[bytes] = []
        self._flush_scheduled = False
        self._closing = False
        self._heartbeat: asyncio.TimerHandle | None = None
        self._heartbeat_interval = 0
        self._last_received = time.monotonic()
        self._last_sent = time.monotonic()
        self._reading = True  # what the session wants (flow control, alarms)
        self._turn_pending = False  # buffered frames wait for the next turn
        self._transport_reading = True
        self._write_blocked = False
        self._pending_bytes = 0  # written by the session since the last flush
        self._buffer_at_last_tick = 0
        self._last_write_progress = time.monotonic()
        self._handshake_timer: asyncio.TimerHandle | None = None
        self._lingering = False  # closed in AMQP terms; read only to see the client hang up

    # --- asyncio.Protocol -----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(
            asyncio.Transport, transport
        )  # uvloop's transports are not subclasses
        transport = self.transport
        transport.set_write_buffer_limits(HIGH_WATER, LOW_WATER)
        peer = transport.get_extra_info("peername") or ("?", 0)
        ssl_object = transport.get_extra_info("ssl_object")
        tls = describe(ssl_object) if ssl_object is not None else None
        self.session = Session(self.broker, self, (peer[0], peer[1]), tls)
        # RabbitMQ's handshake_timeout (10 s): a client that never completes the handshake goes.
        self._handshake_timer = self.loop.call_later(10.0, self._handshake_timed_out)
        self._address = peer[0]
        admission, admitted_before = self.admission, self._admitted
        if (
            admission is not None
            and not admitted_before
            and not admission.arrived(self._address, self)
        ):
            self._held = not self._closing  # not reset: it waits its turn, unread
            self._update_reading()

    # --- admission's Admitted -------------------------------------------------------------

    def admit(self) -> None:
        self._held = False
        self._update_reading()
        if self._held_data:
            data = b"".join(self._held_data)
            self._held_data.clear()
            self.data_received(data)

    def _hold_data(self, data: bytes) -> None:
        self._held_data.append(data)
        if sum(map(len, self._held_data)) > HELD_BYTES_LIMIT:
            self.reset()
        elif self.transport is not None:
            self.transport.pause_reading()

    def reset(self) -> None:
        self._closing = True
        self._cancel_timers()
        if self.transport is not None:
            reset_transport(self.transport)

    @property
    def gone(self) -> bool:
        transport = self.transport
        return self._closing or (transport is not None and transport.is_closing())

    def _failed(self) -> bool:
        """Whether the connection ended for its client's fault: an error the node closed it
        for, or a handshake given up or timed out (a probe that sends nothing is neither)."""
        session = self.session
        if session is None:
            return False
        if session.failed:
            return True
        return session.phase != "running" and (self._bytes_seen or self._handshake_expired)

    # --- asyncio.Protocol, continued ------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        self.broker.busy_poll.input_arrived()
        self._last_received = time.monotonic()
        self._bytes_seen = True
        if self._held:
            self._hold_data(data)
            return
        if self.session is not None and not self._closing:
            self.session.data_received(data, self._budget())
            self.broker.pending_writes.read_handled()
            self._after_turn()

    def _budget(self) -> int:
        session = self.session
        if session is not None and session.publishes_to_congested_queue:
            return CONGESTED_FRAMES_PER_TURN
        return FRAMES_PER_TURN

    def _after_turn(self) -> None:
        session = self.session
        pending = session is not None and not self._closing and session.conn.has_buffered_frames
        if pending and not self._turn_pending:
            self._turn_pending = True
            self.broker.connections_mid_read += 1
            self.loop.call_soon(self._next_turn)
        self._update_reading()

    def _next_turn(self) -> None:
        self._turn_pending = False
        self.broker.connections_mid_read -= 1
        if self.session is None or self._closing:
            return
        if self._reading:
            self.session.data_received(b"", self._budget())
            self.broker.pending_writes.read_handled()
        self._after_turn()

    def _update_reading(self) -> None:
        """The socket is read while the session allows it and no frames wait their turn."""
        want = self._lingering or (
            self._reading
            and not self._held
            and not self._turn_pending
            and not self._write_blocked
            and not self._closing
        )
        if self.transport is None or want == self._transport_reading:
            return
        self._transport_reading = want
        if want:
            self.transport.resume_reading()
        else:
            self.transport.pause_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        self._closing = True
        self._cancel_timers()
        if self.admission is not None and self._failed():
            self.admission.failed(self._address)
        if self.session is not None:
            self.session.connection_lost()

    def pause_writing(self) -> None:
        # A peer that does not read what we send is not read from either: its replies and
        # confirms would otherwise pile up here without bound.
        self._write_blocked = True
        self._update_reading()
        if self.session is not None:
            self.session.set_writable(False)

    def resume_writing(self) -> None:
        self._write_blocked = False
        self._update_reading()
        if self.session is not None:
            self.session.set_writable(True)

    # --- the session's Transport ---------------------------------------------------------

    def write(self, data: bytes) -> None:
        if self._closing:
            return
        self._out.append(data)
        self._pending_bytes += len(data)
        session = self.session
        # A turn that produces more than the socket's high-water mark stops deliveries now,
        # not when the transport sees the bytes: a no-ack consumer must not get the whole queue.
        if self._pending_bytes > HIGH_WATER and session is not None and session.writable:
            session.writable = False
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self.broker.pending_writes.add(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        if not self._out or self.transport is None:
            return
        session = self.session
        if session is not None and session.broker.stores is not None:
            # Delivery marks reach the OS before the deliveries they mark reach the client: a
            # kill -9 in between would bring those messages back without redelivered set.
            session.broker.stores.committer.flush()
        data = b"".join(self._out) if len(self._out) > 1 else self._out[0]
        self._out.clear()
        self._pending_bytes = 0
        self._last_sent = time.monotonic()
        self.transport.write(data)
        if session is not None and not session.writable and not self._write_blocked:
            session.set_writable(True)  # the transport took it all: deliveries may go on

    def close(self) -> None:
        """Flush what is queued, then close the socket."""
        if self._closing or self.transport is None:
            return
        self._flush()
        self._closing = True
        self.transport.close()

    def close_when_client_does(self) -> None:
        """Flush, handle no more input, and wait (bounded) for the client to close the socket."""
        if self._closing or self.transport is None:
            return
        self._flush()
        self._closing = True
        self._lingering = True
        self._cancel_timers()
        interval = self._heartbeat_interval
        bound = interval if 0 < interval < CLOSED_LINGER_SECONDS else CLOSED_LINGER_SECONDS
        self.loop.call_later(bound, self._abort)
        self._update_reading()

    def close_silently(self) -> None:
        """Read no more and drop the socket after RabbitMQ's silent-close delay (3 s)."""
        self._closing = True
        self._update_reading()
        self.loop.call_later(SILENT_CLOSE_SECONDS, self._abort)

    def close_after_grace(self) -> None:
        self._flush()
        self.loop.call_later(CLOSE_GRACE_SECONDS, self._abort)

    def _abort(self) -> None:
        # abort, not close: close would wait for a peer that does not read to take our bytes.
        if self.transport is not None:
            self.transport.abort()

    def heartbeat_negotiated(self, seconds: int) -> None:
        if self._handshake_timer is not None:
            self._handshake_timer.cancel()
            self._handshake_timer = None
        self._heartbeat_interval = seconds
        if seconds > 0:
            self._heartbeat = self.loop.call_later(seconds / 2, self._heartbeat_tick)

    def set_reading(self, reading: bool) -> None:
        if reading == self._reading:
            return
        self._reading = reading
        if (
            reading
            and not self._turn_pending
            and self.session is not None
            and self.session.conn.has_buffered_frames
        ):
            self._turn_pending = True
            self.broker.connections_mid_read += 1
            self.loop.call_soon(self._next_turn)
        self._update_reading()

    # --- timers ---------------------------------------------------------------------------

    def _heartbeat_tick(self) -> None:
        interval = self._heartbeat_interval
        now = time.monotonic()
        if self.transport is not None:
            # A peer whose socket still drains what we send is alive even while we are not
            # reading from it (it is the reason we stopped).
            buffered = self.transport.get_write_buffer_size()
            if not self._write_blocked or buffered < self._buffer_at_last_tick:
                self._last_write_progress = now
            self._buffer_at_last_tick = buffered
        # Two missed intervals from a peer that is not blocked by us means it is gone; one we do
        # not read because it does not read us must at least be draining its socket.
        silent = now - self._last_received > 2 * interval
        if self._write_blocked:
            dead = silent and now - self._last_write_progress > 2 * interval
        else:
            dead = self._transport_reading and silent
        if dead:
            log.warning("missed heartbeats from client, timeout: %ss", interval)
            self._closing = True
            if self.transport is not None:
                self.transport.abort()
            return
        if now - self._last_sent >= interval / 2:
            self.write(HEARTBEAT_FRAME)
        self._heartbeat = self.loop.call_later(interval / 2, self._heartbeat_tick)

    def _handshake_timed_out(self) -> None:
        self._handshake_timer = None
        self._handshake_expired = True
        if (
            self.session is not None
            and not self.session.conn.is_open
            and self.transport is not None
        ):
            self.transport.close()

    def _cancel_timers(self) -> None:
        for timer in (self._heartbeat, self._handshake_timer):
            if timer is not None:
                timer.cancel()
