"""The Cluster gRPC service: calls from peers turned into the node's operations, and their
results or errors turned into replies (cluster/remote.py is the calling side)."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol

import grpc

from cluster.errors import ClusterError, ClusterUnavailable, NotLeaderHere, OutcomeUnknown
from cluster.gossip.driver import GossipDriver
from cluster.metadata import CommandError, decode_command
from cluster.raft_wire import MalformedBatch
from cluster.remote import Membership
from cluster.secret import Caller
from cluster.transport import caller_of
from proto import cluster_pb2, cluster_pb2_grpc, gossip_pb2, raft_pb2
from proto.metadata_schema import Command

log = logging.getLogger(__name__)

# A request that names no timeout gets this many seconds.
_DEFAULT_TIMEOUT = 5.0


class NotAMember(Exception):
    """A peer outside the cluster sent Raft traffic; its stream is closed with this reason."""


class LeaderSide(Protocol):
    """What a node does for its peers (see cluster.service.ClusterService)."""

    def admits(self, caller: Caller) -> bool: ...

    def receive_raft(self, caller: Caller, batch: raft_pb2.RaftBatch) -> None: ...

    async def submit_here(self, command: Command, timeout: float) -> dict[str, Any]: ...

    async def read_index_here(self, timeout: float) -> int: ...

    async def join_here(
        self, name: str, address: str, fresh: bool, timeout: float
    ) -> Membership: ...

    async def forget_here(self, name: str, timeout: float) -> Membership: ...


class ClusterServicer(cluster_pb2_grpc.ClusterServicer):  # type: ignore[misc]
    """Answers the Cluster service's calls; authentication was done by the interceptor."""

    def __init__(self, node: LeaderSide, gossip: Callable[[], GossipDriver | None]) -> None:
        self._node = node
        self._gossip = gossip

    async def Raft(  # gRPC's method names
        self, request_iterator: AsyncIterator[raft_pb2.RaftBatch], context: grpc.aio.ServicerContext
    ) -> cluster_pb2.StreamClosed:
        caller = caller_of(context)
        async for batch in request_iterator:
            try:
                self._node.receive_raft(caller, batch)
            except MalformedBatch as error:
                log.warning("dropping a malformed Raft batch from %s: %s", caller.node, error)
            except NotAMember as error:
                await context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(error))
        return cluster_pb2.StreamClosed()

    async def Submit(
        self, request: cluster_pb2.SubmitRequest, context: grpc.aio.ServicerContext
    ) -> cluster_pb2.SubmitReply:
        try:
            command = decode_command(request.command)
        except CommandError as error:
            return cluster_pb2.SubmitReply(failure=_failure("rejected", str(error)))
        if not self._node.admits(caller_of(context)):
            return cluster_pb2.SubmitReply(failure=_outsider(caller_of(context)))
        timeout = request.timeout_seconds or _DEFAULT_TIMEOUT
        result = await _answer(lambda: self._node.submit_here(command, timeout))
        if isinstance(result, dict):
            return cluster_pb2.SubmitReply(reply=json.dumps(result).encode())
        return cluster_pb2.SubmitReply(**result)

    async def ReadIndex(
        self, request: cluster_pb2.ReadIndexRequest, context: grpc.aio.ServicerContext
    ) -> cluster_pb2.ReadIndexReply:
        if not self._node.admits(caller_of(context)):
            return cluster_pb2.ReadIndexReply(failure=_outsider(caller_of(context)))
        timeout = request.timeout_seconds or _DEFAULT_TIMEOUT
        result = await _answer(lambda: self._node.read_index_here(timeout))
        if isinstance(result, int):
            return cluster_pb2.ReadIndexReply(index=result)
        return cluster_pb2.ReadIndexReply(**result)

    async def Join(
        self, request: cluster_pb2.JoinRequest, context: grpc.aio.ServicerContext
    ) -> cluster_pb2.MembershipReply:
        if not request.name or not request.address:
            return cluster_pb2.MembershipReply(
                failure=_failure("rejected", "name and address needed")
            )
        return _membership_reply(
            await _answer(
                lambda: self._node.join_here(
                    request.name, request.address, request.fresh, _DEFAULT_TIMEOUT * 2
                )
            )
        )

    async def Forget(
        self, request: cluster_pb2.ForgetRequest, context: grpc.aio.ServicerContext
    ) -> cluster_pb2.MembershipReply:
        if not self._node.admits(caller_of(context)):
            return cluster_pb2.MembershipReply(failure=_outsider(caller_of(context)))
        return _membership_reply(
            await _answer(lambda: self._node.forget_here(request.name, _DEFAULT_TIMEOUT * 2))
        )

    async def Ping(
        self, request: gossip_pb2.Ping, context: grpc.aio.ServicerContext
    ) -> gossip_pb2.Ack:
        gossip = self._gossip()
        return gossip.on_ping(caller_of(context), request) if gossip else gossip_pb2.Ack()

    async def PingReq(
        self, request: gossip_pb2.PingReq, context: grpc.aio.ServicerContext
    ) -> gossip_pb2.Ack:
        gossip = self._gossip()
        if gossip is None:
            return gossip_pb2.Ack()
        return await gossip.on_ping_req(caller_of(context), request)


async def _answer(operation: Callable[[], Awaitable[Any]]) -> Any:
    """The operation's result, or the keyword arguments of the reply that says why not."""
    try:
        return await operation()
    except NotLeaderHere as redirect:
        return {
            "not_leader": cluster_pb2.Redirect(
                leader=redirect.leader or "", leader_address=redirect.leader_address or ""
            )
        }
    except ClusterUnavailable as error:
        return {"failure": _failure(error.kind, error.reason)}
    except OutcomeUnknown as error:
        return {"failure": _failure("unknown", str(error))}
    except ClusterError as error:
        return {"failure": _failure("rejected", str(error))}


def _outsider(caller: Caller) -> cluster_pb2.Failure:
    return _failure(
        "removed",
        f"node {caller.node} is not a member of this cluster (it was removed with "
        "forget_cluster_node, or never joined)",
    )


def _failure(kind: str, reason: str) -> cluster_pb2.Failure:
    return cluster_pb2.Failure(kind=kind, reason=reason)


def _membership_reply(result: Any) -> cluster_pb2.MembershipReply:
    if isinstance(result, Membership):
        members = cluster_pb2.MemberList(
            members=[
                cluster_pb2.Member(name=name, address=address)
                for name, address in sorted(result.members.items())
            ],
            voters=list(result.voters),
        )
        return cluster_pb2.MembershipReply(members=members)
    return cluster_pb2.MembershipReply(**result)
