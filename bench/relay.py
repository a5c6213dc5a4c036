"""A byte relay in a process of its own: what a second Python process in a message's path costs
at the least (one wake-up, one read and one write per message), the floor under a hop's latency.

    python -m bench.relay TARGET_PORT    # prints the port it listens on, then relays until killed
"""

from __future__ import annotations

import asyncio
import sys

try:
    import uvloop
except ImportError:  # pragma: no cover - Leveret's nodes use uvloop when it is installed
    uvloop = None


class _Pipe(asyncio.Protocol):
    """One direction's writer is the other direction's transport."""

    def __init__(self, target_port: int, peer: _Pipe | None = None) -> None:
        self.target_port = target_port
        self.peer = peer
        self.transport: asyncio.Transport | None = None
        self._early: list[bytes] = []  # what the client sent before the target answered

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        if self.peer is None:  # a client: connect it through
            asyncio.get_running_loop().create_task(self._dial())

    async def _dial(self) -> None:
        loop = asyncio.get_running_loop()
        _, target = await loop.create_connection(
            lambda: _Pipe(self.target_port, self), "127.0.0.1", self.target_port
        )
        self.peer = target
        for data in self._early:
            target.write(data)
        self._early.clear()

    def write(self, data: bytes) -> None:
        if self.transport is not None:
            self.transport.write(data)

    def data_received(self, data: bytes) -> None:
        if self.peer is None:
            self._early.append(data)
        else:
            self.peer.write(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.close()


async def _serve(target_port: int) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: _Pipe(target_port), "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()


def main() -> None:
    target_port = int(sys.argv[1])
    if uvloop is not None:
        uvloop.run(_serve(target_port))
    else:
        asyncio.run(_serve(target_port))


if __name__ == "__main__":
    main()
