"""The gRPC channels between nodes (cluster/transport.py): a channel of one's own reaches a node
that came back at once, whatever backoff the shared channel to it is waiting out."""

from __future__ import annotations

import asyncio

import grpc
import pytest

from cluster.secret import CallSigner
from cluster.transport import PeerChannels
from proto import queues_pb2, queues_pb2_grpc


class Locator(queues_pb2_grpc.QueuesServicer):  # type: ignore[misc]
    """A node's Queues service, as far as Locate."""

    async def Locate(  # gRPC's method name
        self, request: queues_pb2.LocateRequest, context: grpc.aio.ServicerContext
    ) -> queues_pb2.Location:
        return queues_pb2.Location(port=1)


async def serve(port: int) -> tuple[grpc.aio.Server, int]:
    server = grpc.aio.server()
    queues_pb2_grpc.add_QueuesServicer_to_server(Locator(), server)
    bound = server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    return server, bound


async def locate(channel: grpc.aio.Channel) -> None:
    await queues_pb2_grpc.QueuesStub(channel).Locate(queues_pb2.LocateRequest(), timeout=5)


def test_a_channel_of_its_own_reaches_a_node_that_is_back_at_once() -> None:
    async def scenario() -> None:
        server, port = await serve(0)
        address = f"127.0.0.1:{port}"
        peers = PeerChannels(CallSigner(b"a secret", "b@localhost", ""))
        try:
            await locate(peers.channel(address))
            await server.stop(0)
            # The node is down: the shared channel fails to connect, then waits out a backoff
            # (100 ms at least) before it tries again.
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await locate(peers.channel(address))
            assert refused.value.code() is grpc.StatusCode.UNAVAILABLE
            server, _ = await serve(port)  # back on the same port, within a few milliseconds
            own = peers.own_channel(address)
            try:
                await locate(own)  # (as a queue link's attempt asks where to connect)
            finally:
                await own.close()
        finally:
            await peers.close()
            await server.stop(0)

    asyncio.run(asyncio.wait_for(scenario(), 30))
