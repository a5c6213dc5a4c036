"""Calls to another node's leader-side operations, with their answers turned back into results
or the cluster layer's exceptions (the mirror of cluster/rpc.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import grpc

from cluster.errors import ClusterUnavailable, NoQuorum, NotLeaderHere, OutcomeUnknown
from cluster.transport import PeerChannels
from proto import cluster_pb2


class PeerUnreachable(ClusterUnavailable):
    """The node did not answer (down, paused, or not listening there)."""

    kind = "unreachable"


@dataclass(frozen=True, slots=True)
class Membership:
    """The members (name -> address) and Raft voters, as the leader knows them."""

    members: dict[str, str]
    voters: tuple[str, ...]


class Remote:
    """Leader-side operations on the node at an address."""

    def __init__(self, channels: PeerChannels) -> None:
        self._channels = channels

    async def submit(self, address: str, command: bytes, timeout: float) -> dict[str, Any]:
        request = cluster_pb2.SubmitRequest(command=command, timeout_seconds=_server_side(timeout))
        reply = await self._call(address, "Submit", request, timeout, unsure=True)
        outcome = _outcome(reply)
        return dict(json.loads(reply.reply)) if outcome == "reply" else {}

    async def read_index(self, address: str, timeout: float) -> int:
        request = cluster_pb2.ReadIndexRequest(timeout_seconds=_server_side(timeout))
        reply = await self._call(address, "ReadIndex", request, timeout)
        _outcome(reply)
        return int(reply.index)

    async def join(
        self, address: str, name: str, own_address: str, fresh: bool, timeout: float
    ) -> Membership:
        request = cluster_pb2.JoinRequest(name=name, address=own_address, fresh=fresh)
        return _membership(await self._call(address, "Join", request, timeout))

    async def forget(self, address: str, name: str, timeout: float) -> Membership:
        request = cluster_pb2.ForgetRequest(name=name)
        return _membership(await self._call(address, "Forget", request, timeout))

    async def _call(
        self, address: str, method: str, request: Any, timeout: float, unsure: bool = False
    ) -> Any:
        try:
            return await self._channels.call(address, method, request, timeout)
        except grpc.aio.AioRpcError as error:
            code = error.code()
            if code is grpc.StatusCode.UNAUTHENTICATED:
                raise ClusterUnavailable(
                    f"the node at {address} refused our cluster credentials ({error.details()}): "
                    "every node of a cluster needs the same cluster secret",
                    kind="rejected",
                ) from None
            if code is grpc.StatusCode.DEADLINE_EXCEEDED and unsure:
                raise OutcomeUnknown(
                    f"the node at {address} did not answer within {timeout:.1f}s; the command "
                    "may or may not have been applied"
                ) from None
            raise PeerUnreachable(f"the node at {address} did not answer ({code.name})") from None


def _server_side(timeout: float) -> float:
    # The serving node gives up a little earlier, so that its clear answer arrives in time.
    return max(timeout - 0.25, timeout * 0.8)


def _outcome(reply: Any) -> str:
    outcome = reply.WhichOneof("outcome")
    if outcome == "not_leader":
        redirect = reply.not_leader
        raise NotLeaderHere(redirect.leader or None, redirect.leader_address or None)
    if outcome == "failure":
        failure = reply.failure
        if failure.kind == NoQuorum.kind:
            raise NoQuorum(failure.reason)
        raise ClusterUnavailable(failure.reason, kind=failure.kind)
    if outcome is None:
        raise ClusterUnavailable("an empty answer from the leader", kind="rejected")
    return str(outcome)


def _membership(reply: cluster_pb2.MembershipReply) -> Membership:
    _outcome(reply)
    members = {member.name: member.address for member in reply.members.members}
    return Membership(members, tuple(reply.members.voters))
