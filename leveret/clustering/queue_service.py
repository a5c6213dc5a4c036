"""This node's queues for the other nodes' clients: each data connection becomes a HomeSession.

Other nodes ask where data connections are taken with the Queues service's Locate call on the
cluster port (authenticated as every gRPC call between nodes), then connect there.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Callable
from typing import TYPE_CHECKING

import grpc

from cluster.data_connection import DataConnection, serve_data
from cluster.secret import Caller, CallVerifier
from proto import queues_pb2, queues_pb2_grpc

from .home_session import HomeSession

if TYPE_CHECKING:
    from ..broker import Broker

log = logging.getLogger(__name__)

# How long a batch waits for this node to apply the metadata its sender had applied; past it,
# the batch is applied anyway (what names an unknown queue gets a 404).
_CATCH_UP_SECONDS = 5.0


class QueuesService(queues_pb2_grpc.QueuesServicer):  # type: ignore[misc]
    """Serves this node's queues to the other nodes' clients."""

    def __init__(self, broker: Broker) -> None:
        self._broker = broker
        self._server: asyncio.Server | None = None
        self._homes: set[_Home] = set()
        self.port = 0

    def install(self, server: grpc.aio.Server) -> None:
        queues_pb2_grpc.add_QueuesServicer_to_server(self, server)

    async def start(
        self, bind: str, port: int, verifier: CallVerifier, tls: ssl.SSLContext | None
    ) -> None:
        """Listen for data connections on bind:port (0: any free port)."""
        try:
            self._server = await serve_data(bind, port, verifier, self._accept, tls)
        except OSError as error:
            reason = error.strerror or str(error)
            raise OSError(
                f"cannot listen for node-to-node messages on {bind}:{port}: {reason}"
            ) from None
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is None:
            return
        self._server.close()
        for home in list(self._homes):
            home.connection.close()
        try:
            async with asyncio.timeout(5):
                await self._server.wait_closed()
        except TimeoutError:
            log.warning("some data connections did not close in time")

    async def Locate(  # gRPC's method name
        self, request: queues_pb2.LocateRequest, context: grpc.aio.ServicerContext
    ) -> queues_pb2.Location:
        return queues_pb2.Location(port=self.port)

    def consumers_by_peer(self) -> dict[str, int]:
        """The consumers other nodes' clients hold on this node's queues, by node."""
        counts: dict[str, int] = {}
        for home in self._homes:
            session = home.session
            counts[session.peer] = counts.get(session.peer, 0) + session.consumer_count
        return counts

    def _accept(self, caller: Caller, connection: DataConnection) -> _Home:
        home = _Home(self._broker, caller.node, connection, self._homes.discard)
        self._homes.add(home)
        return home


class _Home:
    """One data connection's session (a cluster.data_connection.Receiver)."""

    def __init__(
        self,
        broker: Broker,
        peer: str,
        connection: DataConnection,
        forget: Callable[[_Home], None],
    ) -> None:
        self.connection = connection
        self._broker = broker
        self._forget = forget
        self.session = HomeSession(broker, peer, connection)
        self._catching_up: asyncio.Task[None] | None = None

    def received(self, up: queues_pb2.Up) -> None:
        metadata = self._broker.metadata
        if up.applied > metadata.applied_index:
            # Nothing more is read meanwhile, so TCP's flow control holds the sender back.
            self.connection.pause_reading()
            self._catching_up = asyncio.get_running_loop().create_task(
                self._catch_up(up), name=f"queue-link-from-{self.session.peer}-catching-up"
            )
            return
        self.session.receive(up)

    def writable(self) -> None:
        self.session.flush_now()

    def read_taken(self) -> None:
        # A batch from the other node: its deliveries to this node's clients, and the answers
        # going back (the session's own flush waits there too), leave now rather than at the
        # end of the turn.
        self._broker.pending_writes.flush()
        self._broker.busy_poll.input_arrived()

    def ended(self) -> None:
        self.session.close()
        if self._catching_up is not None:
            self._catching_up.cancel()
        self._forget(self)

    async def _catch_up(self, up: queues_pb2.Up) -> None:
        """Apply `up` once this node has applied what its sender had (or after a while)."""
        try:
            async with asyncio.timeout(_CATCH_UP_SECONDS):
                await self._broker.metadata.wait_applied(up.applied)
        except TimeoutError:
            log.warning(
                "metadata change %d, applied on %s, is not applied here after %.0fs",
                up.applied,
                self.session.peer,
                _CATCH_UP_SECONDS,
            )
        self._catching_up = None
        if self.session.open:
            self.session.receive(up)
            self.connection.resume_reading()
