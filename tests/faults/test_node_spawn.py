"""The harness starts nodes from a test process that has used gRPC, and the children survive."""

from __future__ import annotations

import asyncio
import subprocess

import grpc

from tests.faults.nodes import die_with_parent

_SPAWNS = 1000  # with gRPC's fork handlers on, 3 to 8 of these children aborted in each run


async def _use_grpc() -> None:
    """A server and a call, so gRPC's event engine and its poller thread are running."""
    server = grpc.aio.server()
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        try:
            await channel.unary_unary("/leveret.Test/Nothing")(b"", timeout=5)
        except grpc.aio.AioRpcError as error:
            assert error.code() is grpc.StatusCode.UNIMPLEMENTED
        failed = []
        for _ in range(_SPAWNS):
            # As LabNode.launch starts a node: a preexec_fn makes subprocess fork, not vfork.
            child = subprocess.run(
                ["/bin/true"], preexec_fn=die_with_parent, capture_output=True, check=False
            )
            if child.returncode != 0:
                failed.append((child.returncode, child.stderr[:200]))
    await server.stop(None)
    assert not failed, f"{len(failed)} of {_SPAWNS} children died before exec: {failed[:3]}"


def test_children_forked_after_grpc_reach_exec() -> None:
    asyncio.run(_use_grpc())
