"""Operations only the leader can do: propose commands, confirm reads, change the voters.

Each raises NotLeaderHere (with the leader, when known) on a node that is not the leader, so
the caller can go there instead, and NoQuorum when a majority does not answer in time.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from cluster.address_book import AddressBook
from cluster.errors import ClusterUnavailable, NoQuorum, NotLeaderHere, ProposalLost
from cluster.metadata import encode_command
from cluster.metadata_machine import MetadataMachine
from cluster.node_loop import RaftLoop, ReadAborted
from cluster.raft import ConfOp, NotLeader, ProposalRejected, Role
from cluster.remote import Membership
from proto.metadata_schema import AddMember

# How often a proposal refused for now (a transfer or a membership change under way) is retried.
_RETRY_SECONDS = 0.05


class LeaderOps:
    """The leader's side of submit, read barrier and membership changes."""

    def __init__(
        self,
        loop: RaftLoop,
        machine: MetadataMachine,
        book: AddressBook,
        quorum_text: Callable[[], str],
    ) -> None:
        self._loop = loop
        self._machine = machine
        self._book = book
        self._quorum_text = quorum_text

    def require_leader(self) -> None:
        """Raise NotLeaderHere unless this node leads."""
        raft = self._loop.raft
        if raft.role is not Role.LEADER:
            raise self._redirect(raft.leader_id)

    def membership(self) -> Membership:
        """The members table and the voters, as this node has them."""
        members = {record.name: record.address for record in self._machine.state.members()}
        return Membership(members, self._loop.raft.voters)

    async def submit(self, data: bytes, timeout: float) -> dict[str, Any]:
        """Propose a command (as `encode_command` wrote it) and return the metadata store's
        reply once it is applied."""
        deadline = _deadline(timeout)
        while True:
            try:
                future = self._loop.propose(data)
                async with asyncio.timeout_at(deadline):
                    reply = await asyncio.shield(future)
                break
            except NotLeader as error:
                raise self._redirect(error.leader) from None
            except ProposalRejected:
                await self._pause(deadline, timeout, "the leader is handing over leadership")
            except TimeoutError:
                raise NoQuorum(
                    f"no quorum: the change was proposed but not committed within "
                    f"{timeout:.1f}s ({self._quorum_text()}); it takes effect only if a "
                    "majority accepts it later"
                ) from None
            except ProposalLost:
                raise self._redirect(self._loop.raft.leader_id) from None
        return dict(reply) if isinstance(reply, dict) else {"status": "ok"}

    async def read_index(self, timeout: float) -> int:
        """An index such that any node that applied it has seen every write before this call."""
        deadline = _deadline(timeout)
        try:
            future = self._loop.read_index()
        except NotLeader as error:
            raise self._redirect(error.leader) from None
        try:
            async with asyncio.timeout_at(deadline):
                return await asyncio.shield(future)
        except TimeoutError:
            raise NoQuorum(
                f"no quorum: the leader could not confirm its leadership within {timeout:.1f}s "
                f"({self._quorum_text()})"
            ) from None
        except ReadAborted:
            raise self._redirect(self._loop.raft.leader_id) from None

    async def change_voters(self, op: ConfOp, node: str, timeout: float) -> None:
        """Add or remove one voter (done already counts as done) and wait until applied."""
        deadline = _deadline(timeout)
        while True:
            raft = self._loop.raft
            if (op is ConfOp.ADD) == (node in raft.voters):
                return
            if op is ConfOp.REMOVE and len(raft.voters) == 1:
                raise ClusterUnavailable(f"cannot remove {node}, the last member", kind="rejected")
            try:
                future = self._loop.propose_conf_change(op, node)
                break
            except NotLeader as error:
                raise self._redirect(error.leader) from None
            except ProposalRejected as error:
                await self._pause(deadline, timeout, str(error))
        try:
            async with asyncio.timeout_at(deadline):
                await asyncio.shield(future)
        except TimeoutError:
            raise NoQuorum(
                f"no quorum: the membership change was not committed within {timeout:.1f}s "
                f"({self._quorum_text()})"
            ) from None
        except ProposalLost:
            raise self._redirect(self._loop.raft.leader_id) from None

    async def join(self, name: str, address: str, fresh: bool, timeout: float) -> Membership:
        """Make `name` a member (or record its new address when it already is one)."""
        deadline = _deadline(timeout)
        self.require_leader()
        current = self.membership()
        if name not in current.voters and not fresh:
            raise ClusterUnavailable(
                f"node {name} is not a member of this cluster: it was removed "
                "(forget_cluster_node) or belongs to another cluster; to join again, start it "
                "with an empty data directory",
                kind="removed",
            )
        if current.members.get(name) != address:
            await self.submit(encode_command(AddMember(name=name, address=address)), timeout)
        await self.change_voters(ConfOp.ADD, name, _left(deadline))
        return self.membership()

    async def _pause(self, deadline: float, timeout: float, why: str) -> None:
        if _left(deadline) <= 0:
            raise NoQuorum(f"no quorum: still refused after {timeout:.1f}s: {why}")
        await asyncio.sleep(min(_RETRY_SECONDS, _left(deadline)))
        self.require_leader()

    def _redirect(self, leader: str | None) -> NotLeaderHere:
        if leader == self._book.own_name:
            leader = None  # we just lost leadership; nobody else is known yet
        return NotLeaderHere(leader, self._book.get(leader) if leader else None)


def _deadline(timeout: float) -> float:
    return asyncio.get_running_loop().time() + timeout


def _left(deadline: float) -> float:
    return max(deadline - asyncio.get_running_loop().time(), 0.0)
