"""The Queues gRPC service: each Link stream from another node becomes a HomeSession here."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import grpc

from cluster.transport import caller_of
from proto import queues_pb2, queues_pb2_grpc

from .home_session import HomeSession

if TYPE_CHECKING:
    from ..broker import Broker
    from ..metadata import MetadataStore

log = logging.getLogger(__name__)

# How long a batch waits for this node to apply the metadata its sender had applied; past it,
# the batch is applied anyway (what names an unknown queue gets a 404).
_CATCH_UP_SECONDS = 5.0


class QueuesServicer(queues_pb2_grpc.QueuesServicer):  # type: ignore[misc]
    """Serves this node's queues to the other nodes' clients."""

    def __init__(self, broker: Broker) -> None:
        self._broker = broker

    def install(self, server: grpc.aio.Server) -> None:
        queues_pb2_grpc.add_QueuesServicer_to_server(self, server)

    async def Link(  # gRPC's method name
        self, request_iterator: AsyncIterator[queues_pb2.Up], context: grpc.aio.ServicerContext
    ) -> AsyncIterator[queues_pb2.Down]:
        peer = caller_of(context).node
        outbox: deque[queues_pb2.Down] = deque()
        ready = asyncio.Event()

        def send(down: queues_pb2.Down) -> None:
            outbox.append(down)
            ready.set()

        session = HomeSession(self._broker, peer, send, ready.set)
        reader = asyncio.get_running_loop().create_task(
            _read(request_iterator, session, ready, self._broker.metadata),
            name=f"queue-link-from-{peer}",
        )
        try:
            while not (session.failed or reader.done()):
                while outbox and not session.failed:
                    yield outbox.popleft()
                ready.clear()
                if not (outbox or session.failed or reader.done()):
                    await ready.wait()
        finally:
            session.close()
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader


async def _read(
    batches: AsyncIterator[queues_pb2.Up],
    session: HomeSession,
    ended: asyncio.Event,
    metadata: MetadataStore,
) -> None:
    try:
        async for up in batches:
            if up.applied > metadata.applied_index:
                await _catch_up(metadata, up.applied, session.peer)
            session.receive(up)
    except asyncio.CancelledError:
        raise
    except grpc.aio.AioRpcError as error:
        log.info("queue link from %s ended: %s", session.peer, error.code())
    except Exception:
        log.exception("queue link from %s failed", session.peer)
    finally:
        ended.set()


async def _catch_up(metadata: MetadataStore, index: int, peer: str) -> None:
    """Wait (bounded) until this node has applied what `peer` had when it sent a batch; the
    link is not read meanwhile, so gRPC's flow control holds the sender back."""
    try:
        async with asyncio.timeout(_CATCH_UP_SECONDS):
            await metadata.wait_applied(index)
    except TimeoutError:
        log.warning(
            "metadata change %d, applied on %s, is not applied here after %.0fs",
            index,
            peer,
            _CATCH_UP_SECONDS,
        )
