"""Accepting AMQPS: the TLS handshake (its failures logged with the reason), then plain AMQP."""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Callable

log = logging.getLogger(__name__)

# RabbitMQ's ssl_handshake_timeout (5 s): a client that does not finish the handshake goes.
HANDSHAKE_TIMEOUT_SECONDS = 5.0


class TLSAcceptor(asyncio.Protocol):
    """Owns a new socket until its handshake completes, then hands it to `make_protocol()`'s
    protocol, which sees decrypted bytes exactly as on a plain listener.

    asyncio's own TLS listener reports a failed handshake only in debug mode; operators need
    to see why a client was refused (no certificate, unknown CA, expired), so the handshake is
    driven here with start_tls.
    """

    def __init__(
        self, context: ssl.SSLContext, make_protocol: Callable[[], asyncio.Protocol]
    ) -> None:
        self._context = context
        self._make_protocol = make_protocol
        self._task: asyncio.Task[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # Not a byte of the client's hello may be read before start_tls takes the socket over.
        tcp = transport
        tcp.pause_reading()  # type: ignore[attr-defined]
        loop = asyncio.get_running_loop()
        self._task = loop.create_task(self._handshake(tcp))  # type: ignore[arg-type]

    async def _handshake(self, tcp: asyncio.Transport) -> None:
        peer = tcp.get_extra_info("peername") or ("?", 0)
        early = _EarlyBytes()
        try:
            secure = await asyncio.get_running_loop().start_tls(
                tcp,
                early,
                self._context,
                server_side=True,
                ssl_handshake_timeout=HANDSHAKE_TIMEOUT_SECONDS,
            )
        except (ssl.SSLError, OSError, TimeoutError, ConnectionError) as error:
            log.warning("TLS handshake with %s:%s refused: %s", peer[0], peer[1], _reason(error))
            tcp.abort()
            return
        if secure is None:  # the client went during the handshake
            return
        protocol = self._make_protocol()
        # Bytes that came with the end of the handshake went to `early`; the protocol gets the
        # transport first, then them, then everything else directly.
        secure.set_protocol(protocol)
        protocol.connection_made(secure)
        for data in early.data:
            protocol.data_received(data)
        if early.lost:
            protocol.connection_lost(early.error)

    def data_received(self, data: bytes) -> None:  # reading is paused until start_tls
        pass

    def connection_lost(self, exc: Exception | None) -> None:
        pass


class _EarlyBytes(asyncio.Protocol):
    """Holds what the client sends between the end of its handshake and the hand-over."""

    def __init__(self) -> None:
        self.data: list[bytes] = []
        self.lost = False
        self.error: Exception | None = None

    def data_received(self, data: bytes) -> None:
        self.data.append(data)

    def eof_received(self) -> bool | None:
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.error = exc


def _reason(error: BaseException) -> str:
    if isinstance(error, ssl.SSLCertVerificationError):
        return f"certificate verify failed: {error.verify_message}"
    if isinstance(error, ssl.SSLError):
        return error.reason or str(error)
    if isinstance(error, TimeoutError):
        return f"no handshake within {HANDSHAKE_TIMEOUT_SECONDS:g} s"
    return str(error) or type(error).__name__
