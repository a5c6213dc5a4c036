"""Accepting AMQPS: the TLS handshake (its failures logged with the reason), then plain AMQP."""

from __future__ import annotations

import asyncio
import logging
import ssl
from asyncio import sslproto
from collections.abc import Callable
from typing import Any

from .admission import Admission, reset_transport

log = logging.getLogger(__name__)

# RabbitMQ's ssl_handshake_timeout (5 s): a client that does not finish the handshake goes.
HANDSHAKE_TIMEOUT_SECONDS = 5.0
# What a client waiting for admission may have sent (uvloop reads a new socket once even when
# it is paused at once): a ClientHello, even with post-quantum key shares, fits.
HELD_BYTES_LIMIT = 16384


def _tls_protocol_class(loop: asyncio.AbstractEventLoop) -> Any:
    """The event loop's own TLS layer: uvloop's when it runs (compiled, faster), else asyncio's."""
    if type(loop).__module__.startswith("uvloop"):
        from uvloop.loop import SSLProtocol  # type: ignore[import-not-found,attr-defined]

        return SSLProtocol
    return sslproto.SSLProtocol


class TLSAcceptor(asyncio.Protocol):
    """Puts the event loop's TLS layer between a new socket and `make_protocol()`'s protocol,
    which sees decrypted bytes exactly as on a plain listener, once the handshake is done.

    This is what `create_server(ssl=...)` does, but there a failed handshake is reported only
    in asyncio's debug mode; operators need to see why a client was refused (no certificate,
    unknown CA, expired), so the handshake's outcome is watched here.
    """

    def __init__(
        self,
        context: ssl.SSLContext,
        make_protocol: Callable[[], asyncio.Protocol],
        admission: Admission | None = None,
    ) -> None:
        self._context = context
        self._make_protocol = make_protocol
        self._admission = admission
        self._transport: asyncio.Transport | None = None
        self._peer: tuple[str, int] = ("?", 0)
        self._held = False
        self._held_data: list[bytes] = []
        self._gone = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]  # uvloop's are not subclasses
        self._peer = transport.get_extra_info("peername") or ("?", 0)
        # Admission before the TLS handshake, the costliest part of a new connection.
        admission = self._admission
        if admission is not None and not admission.arrived(self._peer[0], self):
            self._held = not self._gone
            if self._held:
                transport.pause_reading()  # type: ignore[attr-defined]
            return
        self._hand_over(transport)

    # --- admission's Admitted -------------------------------------------------------------

    def admit(self) -> None:
        transport = self._transport
        if transport is None or self._gone:
            return
        self._held = False
        tls = self._hand_over(transport)
        data = b"".join(self._held_data)
        self._held_data.clear()
        _feed(tls, data)
        transport.resume_reading()

    def reset(self) -> None:
        self._gone = True
        if self._transport is not None:
            reset_transport(self._transport)

    @property
    def gone(self) -> bool:
        return self._gone

    def connection_lost(self, exc: Exception | None) -> None:  # only while held
        self._gone = True

    # --- the hand-over --------------------------------------------------------------------

    def _hand_over(self, transport: asyncio.BaseTransport) -> Any:
        loop = asyncio.get_running_loop()
        peer = self._peer
        handshake = loop.create_future()
        tls = _tls_protocol_class(loop)(
            loop,
            self._make_protocol(),
            self._context,
            handshake,
            server_side=True,
            ssl_handshake_timeout=HANDSHAKE_TIMEOUT_SECONDS,
        )
        # Before any byte is read: the TLS layer gets the client's hello itself.
        transport.set_protocol(tls)
        tls.connection_made(transport)
        handshake.add_done_callback(lambda done: _report(done, peer, self._admission))
        return tls

    def data_received(self, data: bytes) -> None:
        # Once handed over, the TLS layer reads the socket; before, only a held one is read.
        assert self._held, "TLSAcceptor received data after the hand-over"
        self._held_data.append(data)
        if sum(map(len, self._held_data)) > HELD_BYTES_LIMIT:
            self.reset()
        elif self._transport is not None:
            self._transport.pause_reading()


def _feed(tls: Any, data: bytes) -> None:
    """Bytes read before the hand-over, given to the TLS layer (a buffered protocol)."""
    view = memoryview(data)
    while view:
        buffer = tls.get_buffer(len(view))
        size = min(len(buffer), len(view))
        buffer[:size] = view[:size]
        tls.buffer_updated(size)
        view = view[size:]


def _report(
    handshake: asyncio.Future[Any], peer: tuple[str, int], admission: Admission | None
) -> None:
    error = None if handshake.cancelled() else handshake.exception()
    if error is None:
        return
    if admission is not None and _client_failed(error):
        admission.failed(peer[0])
    if isinstance(error, ssl.SSLCertVerificationError):
        reason = f"certificate verify failed: {error.verify_message}"
    elif isinstance(error, ssl.SSLError):
        reason = error.reason or str(error)
    else:
        reason = str(error) or type(error).__name__
    # A peer that hangs up mid-handshake (a port probe, say) is not worth a warning.
    level = logging.INFO if isinstance(error, ConnectionResetError) else logging.WARNING
    log.log(level, "TLS handshake with %s:%s refused: %s", peer[0], peer[1], reason)


def _client_failed(error: BaseException) -> bool:
    """A handshake refused (bad certificate, no shared version) or timed out counts against the
    client's address; one whose peer hung up (a port probe, say) does not."""
    if isinstance(error, ssl.SSLEOFError | ConnectionResetError | BrokenPipeError):
        return False
    return isinstance(error, ssl.SSLError | TimeoutError | ConnectionAbortedError)
