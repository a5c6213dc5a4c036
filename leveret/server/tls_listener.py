"""Accepting AMQPS: the TLS handshake (its failures logged with the reason), then plain AMQP."""

from __future__ import annotations

import asyncio
import logging
import ssl
from asyncio import sslproto
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

# RabbitMQ's ssl_handshake_timeout (5 s): a client that does not finish the handshake goes.
HANDSHAKE_TIMEOUT_SECONDS = 5.0


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
        self, context: ssl.SSLContext, make_protocol: Callable[[], asyncio.Protocol]
    ) -> None:
        self._context = context
        self._make_protocol = make_protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        loop = asyncio.get_running_loop()
        peer = transport.get_extra_info("peername") or ("?", 0)
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
        handshake.add_done_callback(lambda done: _report(done, peer))

    def data_received(self, data: bytes) -> None:  # the TLS layer took the socket over
        raise AssertionError("TLSAcceptor received data after the hand-over")


def _report(handshake: asyncio.Future[Any], peer: tuple[str, int]) -> None:
    error = None if handshake.cancelled() else handshake.exception()
    if error is None:
        return
    if isinstance(error, ssl.SSLCertVerificationError):
        reason = f"certificate verify failed: {error.verify_message}"
    elif isinstance(error, ssl.SSLError):
        reason = error.reason or str(error)
    else:
        reason = str(error) or type(error).__name__
    # A peer that hangs up mid-handshake (a port probe, say) is not worth a warning.
    level = logging.INFO if isinstance(error, ConnectionResetError) else logging.WARNING
    log.log(level, "TLS handshake with %s:%s refused: %s", peer[0], peer[1], reason)
