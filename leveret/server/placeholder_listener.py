"""Holds a port for a service that is not plugged in: answers HTTP with 503 and closes."""

from __future__ import annotations

import asyncio

_RESPONSE = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
    b"Content-Length: 58\r\nConnection: close\r\n\r\n"
    b'{"error":"unavailable","reason":"service not enabled yet"}'
)


class _Placeholder(asyncio.Protocol):
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport.write(_RESPONSE)  # type: ignore[attr-defined]
        transport.close()


async def start_placeholder(host: str, port: int) -> asyncio.Server:
    loop = asyncio.get_running_loop()
    return await loop.create_server(_Placeholder, host, port, reuse_address=True)
