"""Metadata commands a follower forwards to the leader on its Raft stream, and their answers.

A Submit call per command costs a gRPC call's set-up, signing and checking on both nodes and
waits for the leader to apply the command before it answers. On the Raft stream the command
rides with the follower's other traffic; the leader answers as soon as the command is in its
log (`ForwardOutcome`: index and term) and the follower then waits for that entry to be applied
on its own node, whose state machine gives the same reply as the leader's. A refusal (not the
leader any more, a transfer under way) or a command that never left this node sends the caller
back to the Submit path, which follows redirects.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cluster.errors import NoQuorum, OutcomeUnknown
from cluster.metadata import CommandError, decode_command
from cluster.node_loop import AppendedCallback, RaftLoop
from cluster.raft import NotLeader
from cluster.transport import RaftStreams
from proto import raft_pb2

log = logging.getLogger(__name__)


class NotForwarded(Exception):
    """The leader did not take the command (or it never left): submit it the ordinary way."""


@dataclass(frozen=True, slots=True)
class ForwardingStatistics:
    """Commands this node forwarded on its stream, and how many went the Submit way after."""

    forwarded: int
    sent_back: int


class Forwarder:
    """Both ends: a follower's forwarded commands, and a leader's answers to its followers'."""

    def __init__(
        self, loop: RaftLoop, streams: RaftStreams, quorum_text: Callable[[], str]
    ) -> None:
        self._loop = loop
        self._streams = streams
        self._quorum_text = quorum_text
        self._ids = itertools.count(1)
        # Forwarded commands waiting for the leader's answer: id -> (leader, where it went or
        # None).
        self._waiting: dict[int, tuple[str, asyncio.Future[tuple[int, int] | None]]] = {}
        self._forwarded = 0
        self._sent_back = 0
        # The ids of forwarded reads among those waiting (see `read_index`).
        self._reads: set[int] = set()
        streams.on_forward_dropped = self._dropped
        streams.on_refused_by = self._refused_by
        streams.stream_down_listeners.append(self._ask_reads_again)
        loop.change_listeners.append(self._leader_changed)

    def usable(self, leader: str | None) -> bool:
        """Whether commands can go to `leader` on its stream now."""
        return leader is not None and self._streams.connected(leader)

    async def submit(self, leader: str, data: bytes, timeout: float) -> dict[str, Any]:
        """Forward `data` (an encoded command) to `leader`; its reply, once applied here.

        Raises NotForwarded when the leader did not append it, ProposalLost when another
        leader's entry replaced it (both: safe to submit again), NoQuorum when it was appended
        but not applied here within `timeout`, OutcomeUnknown when no answer came.
        """
        deadline = asyncio.get_running_loop().time() + timeout
        index, term = await self._ask(leader, data, timeout)
        try:
            async with asyncio.timeout_at(deadline):
                reply = await self._loop.expect(index, term)
        except TimeoutError:
            raise NoQuorum(
                f"no quorum: the change was proposed but not committed within {timeout:.1f}s "
                f"({self._quorum_text()}); it takes effect only if a majority accepts it later"
            ) from None
        return dict(reply) if isinstance(reply, dict) else {"status": "ok"}

    async def read_index(self, leader: str, timeout: float) -> int:
        """The leader's confirmed read index (Raft's ReadIndex), asked on its stream.

        This node is one of the confirmations the leader needs: the leader answers with its
        term, and the answer counts only if this node, as it arrives, is still in that term and
        follows that leader, so has voted for no later leader since the leader took the read
        (in a cluster of three the leader then needs no heartbeat round).

        Raises NotForwarded when the leader did not take the request or the answer does not
        count, OutcomeUnknown when no answer came within `timeout`.
        """
        index, _ = await self._ask(leader, b"", timeout, read=True)
        return index

    async def _ask(
        self, leader: str, command: bytes, timeout: float, read: bool = False
    ) -> tuple[int, int]:
        loop = asyncio.get_running_loop()
        ident = next(self._ids)
        answered: asyncio.Future[tuple[int, int] | None] = loop.create_future()
        self._waiting[ident] = (leader, answered)
        if read:
            self._reads.add(ident)
        self._streams.forward(leader, raft_pb2.Forwarded(id=ident, command=command))
        self._forwarded += 1
        try:
            async with asyncio.timeout(timeout):
                position = await answered
        except TimeoutError:
            raise OutcomeUnknown(
                f"leader {leader} did not answer within {timeout:.1f}s; a command may or may "
                "not have been applied"
            ) from None
        finally:
            self._waiting.pop(ident, None)
            self._reads.discard(ident)
        if position is None:
            self._sent_back += 1
            raise NotForwarded(leader)
        return position

    def statistics(self) -> ForwardingStatistics:
        return ForwardingStatistics(self._forwarded, self._sent_back)

    def on_outcomes(self, outcomes: Any) -> None:
        """The leader's answers (raft_pb2.ForwardOutcome) to commands this node forwarded."""
        for outcome in outcomes:
            waiting = self._waiting.get(outcome.id)
            if waiting is None or waiting[1].done():
                continue  # its caller gave up
            leader, answered = waiting
            raft = self._loop.raft
            if outcome.refused:
                answered.set_result(None)
            elif outcome.id in self._reads and (
                raft.term != outcome.term or raft.leader_id != leader
            ):
                # Checked now, as the answer arrives: this node's confirmation of the read.
                answered.set_result(None)
            else:
                answered.set_result((outcome.index, outcome.term))

    def on_forwarded(self, follower: str, forwarded: Any) -> None:
        """Commands (raft_pb2.Forwarded) `follower` forwarded: propose them, answer each."""
        for item in forwarded:
            answer = self._answerer(follower, item.id)
            if not item.command:
                self._read(follower, answer)
                continue
            try:
                decode_command(item.command)  # refuses what the log must not hold
            except CommandError as error:
                log.warning("refusing a malformed command forwarded by %s: %s", follower, error)
                answer(0, 0, error)
                continue
            try:
                self._loop.propose_forwarded(item.command, answer)
            except NotLeader as refusal:
                answer(0, 0, refusal)

    def _read(self, follower: str, answer: AppendedCallback) -> None:
        """A read index for a follower (an empty command), answered with this leader's term
        once confirmed, the follower's own confirmation counted (see `read_index`)."""
        term = self._loop.raft.term
        try:
            confirmed = self._loop.read_index(confirmed_by=follower)
        except NotLeader as refusal:
            answer(0, 0, refusal)
            return

        def done(future: asyncio.Future[int]) -> None:
            if future.cancelled():
                answer(0, 0, NotLeader(None))
            elif (error := future.exception()) is not None:
                answer(0, 0, error)
            else:
                answer(future.result(), term, None)

        confirmed.add_done_callback(done)

    def refuse(self, follower: str, forwarded: Any, reason: str) -> None:
        """Answer commands (raft_pb2.Forwarded) this node will not propose."""
        for item in forwarded:
            self._streams.answer(follower, raft_pb2.ForwardOutcome(id=item.id, refused=reason))

    def stop(self) -> None:
        """Whatever waits for an answer will not get one."""
        for _, answered in self._waiting.values():
            if not answered.done():
                answered.set_exception(OutcomeUnknown("the node stopped"))
        self._waiting.clear()

    def _answerer(self, follower: str, ident: int) -> AppendedCallback:
        def answer(index: int, term: int, refusal: BaseException | None) -> None:
            if refusal is not None:
                outcome = raft_pb2.ForwardOutcome(id=ident, refused=str(refusal) or "refused")
            else:
                outcome = raft_pb2.ForwardOutcome(id=ident, index=index, term=term)
            self._streams.answer(follower, outcome)

        return answer

    def _dropped(self, ids: list[int]) -> None:
        for ident in ids:
            waiting = self._waiting.get(ident)
            if waiting is not None and not waiting[1].done():
                waiting[1].set_result(None)

    def _refused_by(self, peer: str) -> None:
        self._dropped([ident for ident, (leader, _) in self._waiting.items() if leader == peer])

    def _ask_reads_again(self, peer: str) -> None:
        """The stream to `peer` broke: the reads it carried will not be answered, and a read
        is safe to ask again (where a command's outcome is unknown)."""
        self._dropped([ident for ident in self._reads if self._waiting[ident][0] == peer])

    def _leader_changed(self) -> None:
        """Reads asked of a node that no longer leads are asked again, of the leader now."""
        leader = self._loop.raft.leader_id
        self._dropped([ident for ident in self._reads if self._waiting[ident][0] != leader])
