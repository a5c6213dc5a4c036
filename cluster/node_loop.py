"""The asyncio loop around a RaftNode: tick, step, persist (group commit), send, then apply.

Every call into the Raft core returns a Ready; the loop gathers them and handles them in order:
all their entries and hard states are written and fsynced once, in a worker thread (so the event
loop keeps serving clients), then their messages are sent, then committed entries are applied.
A batch that only moves the commit index is written without waiting for the disk.
Proposals and reads are futures resolved when their entry is applied or their read confirmed.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from cluster.errors import OutcomeUnknown, ProposalLost
from cluster.raft import (
    ConfOp,
    Entry,
    FileStorage,
    Message,
    NotLeader,
    RaftError,
    RaftNode,
    RaftStatus,
    Ready,
    Role,
    Snapshot,
)

log = logging.getLogger(__name__)

# Inbound messages stepped per loop turn before the batch is persisted and sent.
_MAX_STEPS_PER_TURN = 1024
# Replies of the latest applied entries kept for a forwarded command whose position arrives
# after its entry was applied here (see `expect`).
_RECENT_REPLIES = 256

# Told where a proposal went in the log, (index, term), or why it did not go in.
AppendedCallback = Callable[[int, int, BaseException | None], None]


class StateMachine(Protocol):
    """What the loop applies committed entries to."""

    def apply(self, entry: Entry) -> Any: ...

    def restore(self, snapshot: Snapshot) -> None: ...

    def snapshot(self) -> bytes: ...


class ReadAborted(Exception):
    """Leadership was lost before a read could be confirmed; ask again."""


@dataclass(frozen=True, slots=True)
class LoopSettings:
    """How often the Raft clock ticks, and how many applied entries trigger a snapshot."""

    tick_seconds: float = 0.1
    snapshot_every: int = 10_000


class RaftLoop:
    """Drives one RaftNode on the running event loop."""

    def __init__(
        self,
        raft: RaftNode,
        storage: FileStorage,
        machine: StateMachine,
        send: Callable[[Sequence[Message]], None],
        settings: LoopSettings | None = None,
        applied_index: int = 0,
    ) -> None:
        self.raft = raft
        self._storage = storage
        self._machine = machine
        self._send = send
        self._settings = settings or LoopSettings()
        self.applied_index = applied_index
        self._inbox: deque[Message] = deque()
        self._unproposed: list[tuple[bytes, asyncio.Future[Any] | AppendedCallback]] = []
        self._readies: list[Ready] = []
        self._wakeup = asyncio.Event()
        self._changed: asyncio.Future[None] | None = None
        self._proposals: dict[int, tuple[int, asyncio.Future[Any]]] = {}
        self._reads: dict[bytes, asyncio.Future[int]] = {}
        # The read the callers of this turn share, not yet handed to the core.
        self._open_read: tuple[bytes, asyncio.Future[int]] | None = None
        self._read_ids = itertools.count(1)
        self._applied_waiters: list[tuple[int, int, asyncio.Future[None]]] = []
        self._recent_replies: deque[tuple[int, int, Any]] = deque(maxlen=_RECENT_REPLIES)
        self._waiter_ids = itertools.count()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        # The Raft clock: when the next tick is due, and how many ticks the loop may sleep
        # through before one that does something (see `_run`).
        self._next_tick = 0.0
        self._idle_ticks = 1
        self._last_view: tuple[Role, str | None, int, tuple[str, ...]] | None = None
        # The term and vote last handed to storage with an fsync (None: not yet this run).
        self._durable_vote: tuple[int, str | None] | None = None
        self.failure: BaseException | None = None
        # Called after each change of role, leader, term or voters.
        self.change_listeners: list[Callable[[], None]] = []

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        """Hand over what the node recovered (committed entries to apply) and start ticking."""
        self._take(self.raft.ready())
        loop = asyncio.get_running_loop()
        self._next_tick = loop.time() + self._settings.tick_seconds
        self._task = loop.create_task(self._run(), name="raft-loop")

    async def stop(self) -> None:
        """Finish the batch in hand, then stop; pending proposals fail as unknown."""
        self._stopping = True
        self._wakeup.set()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
        for _, waiting in [*self._proposals.values(), *self._unproposed]:
            if isinstance(waiting, asyncio.Future):
                _fail(waiting, OutcomeUnknown("the node stopped before the command was applied"))
            else:
                waiting(0, 0, NotLeader(None))  # never appended: the sender may go elsewhere
        if self._open_read is not None:
            _fail(self._open_read[1], ReadAborted("the node stopped"))
            self._open_read = None
        for future in self._reads.values():
            _fail(future, ReadAborted("the node stopped"))
        self._proposals.clear()
        self._unproposed.clear()
        self._reads.clear()
        await asyncio.to_thread(self._storage.close)

    # -- what the node does --------------------------------------------------------------

    def deliver(self, messages: Sequence[Message]) -> None:
        """Messages from peers, stepped on the next turn."""
        self._inbox.extend(messages)
        self._wakeup.set()

    def propose(self, data: bytes) -> asyncio.Future[Any]:
        """Propose a command; the future gets the state machine's reply once the entry is
        applied. Raises NotLeader at once on a follower; later refusals (NotLeader,
        ProposalRejected) and ProposalLost come through the future.

        Proposals made during one turn of the loop go into the log together (one append round
        to the followers, one fsync).
        """
        if self.raft.role is not Role.LEADER:
            raise NotLeader(self.raft.leader_id)
        future: asyncio.Future[Any] = _new_future()
        self._unproposed.append((data, future))
        self._wakeup.set()
        return future

    def propose_forwarded(self, data: bytes, appended: AppendedCallback) -> None:
        """Propose a command another node forwarded: `appended(index, term, None)` is called as
        soon as it is in the log, before the entries go out to the followers (the node that
        forwarded it learns its reply from its own apply, see `expect`); `appended(0, 0,
        error)` if it was refused. Raises NotLeader at once on a follower."""
        if self.raft.role is not Role.LEADER:
            raise NotLeader(self.raft.leader_id)
        self._unproposed.append((data, appended))
        self._wakeup.set()

    def expect(self, index: int, term: int) -> asyncio.Future[Any]:
        """The state machine's reply to the entry at `index`, once applied here, if that entry
        has `term` (ProposalLost if another entry took its place). For a command this node
        forwarded to the leader, which told it where the command went."""
        future: asyncio.Future[Any] = _new_future()
        if index > self.applied_index:
            earlier = self._proposals.get(index)
            if earlier is not None:  # from this node's own time as leader: replaced
                _fail(earlier[1], ProposalLost("another leader's entry took its place"))
            self._proposals[index] = (term, future)
            return future
        recent = next((item for item in self._recent_replies if item[0] == index), None)
        if recent is None:
            future.set_exception(OutcomeUnknown("applied before its reply could be kept"))
        elif recent[1] != term:
            future.set_exception(ProposalLost("another leader's entry took its place"))
        else:
            future.set_result(_copy_reply(recent[2]))
        return future

    def propose_conf_change(self, op: ConfOp, node: str) -> asyncio.Future[Any]:
        """Propose a membership change; resolved once its entry is applied."""
        return self._track_last_entry(self.raft.propose_conf_change(op, node))

    def read_index(self, confirmed_by: str | None = None) -> asyncio.Future[int]:
        """Ask the leader's core for a confirmed read index (raises NotLeader at once).

        Reads asked for during one turn of the loop share one round of heartbeats: each was
        asked before the round began, so the index it confirms serves them all. A read for a
        follower that confirms it itself (`confirmed_by`, see RaftNode.read_index) goes alone.
        """
        if self.raft.role is not Role.LEADER:
            raise NotLeader(self.raft.leader_id)
        if confirmed_by is not None:
            context = next(self._read_ids).to_bytes(8, "big")
            future: asyncio.Future[int] = _new_future()
            self._reads[context] = future
            try:
                self._take(self.raft.read_index(context, confirmed_by))
            except RaftError:
                del self._reads[context]
                raise
            return future
        if self._open_read is None:
            context = next(self._read_ids).to_bytes(8, "big")
            self._open_read = (context, _new_future())
            self._wakeup.set()
        return self._open_read[1]

    def campaign(self) -> None:
        """Start an election now."""
        self._tick_owed()
        self._take(self.raft.campaign())

    def peer_lost(self, peer: str) -> None:
        """Tell the core that `peer` is suspected (see RaftNode.peer_lost)."""
        self._tick_owed()
        self._take(self.raft.peer_lost(peer))

    def transfer_leadership(self, target: str) -> None:
        """Ask the core to hand leadership to `target`."""
        self._tick_owed()
        self._take(self.raft.transfer_leadership(target))

    async def wait_applied(self, index: int) -> None:
        """Return once entries up to `index` are applied here."""
        if self.applied_index >= index:
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._applied_waiters, (index, next(self._waiter_ids), future))
        await future

    async def wait_changed(self) -> None:
        """Return after the next change of role, leader, term or voters."""
        if self._changed is None:
            self._changed = asyncio.get_running_loop().create_future()
        await asyncio.shield(self._changed)

    def status(self) -> RaftStatus:
        return self.raft.status()

    # -- the loop ------------------------------------------------------------------------

    def _take(self, ready: Ready) -> None:
        if not ready.is_empty:
            self._readies.append(ready)
            self._wakeup.set()

    def _track_last_entry(self, ready: Ready) -> asyncio.Future[Any]:
        entry = ready.entries[-1]
        future = _new_future()
        self._proposals[entry.index] = (entry.term, future)
        self._take(ready)
        return future

    def _tick_owed(self) -> None:
        """Run the ticks the loop slept through, up to the one that does something; ticks it
        was late for beyond that (a stalled process) are dropped, so that a node that wakes
        from a pause does not campaign at once. Each turn starts with it, and so does every
        call into the core between turns: such a call may wake a quiet node, and the ticks
        slept through belong to the quiet node (they do nothing to it), not to the awake one,
        whose clock starts then. The loop then works out its sleep anew: the sleep it began
        counted on ticks this has run or dropped, and the call may give the node a timeout
        sooner than a quiet node's long sleep."""
        self._wakeup.set()  # (a turn clears it before it sleeps)
        now = asyncio.get_running_loop().time()
        tick = self._settings.tick_seconds
        slept_through, self._idle_ticks = self._idle_ticks, 1
        if now >= self._next_tick:
            due = min(slept_through, 1 + int((now - self._next_tick) / tick))
            for _ in range(due):
                self._take(self.raft.tick())
            self._next_tick = max(self._next_tick + due * tick, now + tick / 2)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        tick = self._settings.tick_seconds
        try:
            while not self._stopping:
                self._tick_owed()
                steps = min(len(self._inbox), _MAX_STEPS_PER_TURN)
                for _ in range(steps):
                    self._take(self.raft.step(self._inbox.popleft()))
                self._propose_batch()
                self._start_open_read()
                self._notice_changes()
                if self._readies:
                    readies, self._readies = self._readies, []
                    await self._handle(readies)
                    self._notice_changes()
                    continue
                if self._inbox or self._unproposed:
                    continue
                self._wakeup.clear()
                # An idle node sleeps until the tick that does something (a heartbeat to send,
                # an election timeout) rather than waking for every tick: each wake-up of an
                # idle node takes a core from the nodes that serve messages.
                self._idle_ticks = self.raft.idle_ticks()
                wake_at = self._next_tick + (self._idle_ticks - 1) * tick
                try:
                    async with asyncio.timeout(max(wake_at - loop.time(), 0)):
                        await self._wakeup.wait()
                except TimeoutError:
                    pass
        except Exception as error:
            self.failure = error
            log.critical("the Raft loop failed; this node leaves the cluster", exc_info=True)
            raise

    def _propose_batch(self) -> None:
        if not self._unproposed:
            return
        batch, self._unproposed = self._unproposed, []
        try:
            ready = self.raft.propose_many([data for data, _ in batch])
        except RaftError as refusal:
            for _, waiting in batch:
                if isinstance(waiting, asyncio.Future):
                    _fail(waiting, refusal)
                else:
                    waiting(0, 0, refusal)
            return
        for (_, waiting), entry in zip(batch, ready.entries[-len(batch) :], strict=True):
            earlier = self._proposals.pop(entry.index, None)
            if earlier is not None:  # expected while this node followed: replaced
                _fail(earlier[1], ProposalLost("another leader's entry took its place"))
            if isinstance(waiting, asyncio.Future):
                self._proposals[entry.index] = (entry.term, waiting)
            else:
                waiting(entry.index, entry.term, None)
        self._take(ready)

    def _start_open_read(self) -> None:
        if self._open_read is None:
            return
        (context, future), self._open_read = self._open_read, None
        self._reads[context] = future
        try:
            self._take(self.raft.read_index(context))
        except RaftError:
            del self._reads[context]
            _fail(future, ReadAborted("leadership changed before the read began"))

    async def _handle(self, readies: list[Ready]) -> None:
        vote_before = self._durable_vote
        early = [message for ready in readies for message in ready.early_messages]
        if self._needs_fsync(readies):
            if early and self._durable_vote == vote_before:
                # A leader's appends go out while it writes them (it counts itself towards
                # their commit only once they are durable: see `persisted` below).
                self._send(early)
                early = []
            await asyncio.to_thread(self._persist, readies)
        else:
            for ready in readies:
                if ready.must_persist:
                    self._storage.write(ready)
        if early:
            self._send(early)
        for ready in readies:
            if ready.messages:
                self._send(ready.messages)
        for ready in readies:
            self._apply(ready)
        self._release_applied_waiters()
        last = _last_entry(readies)
        if last is not None:
            self._take(self.raft.persisted(last.index, last.term))
        self._maybe_snapshot()

    def _needs_fsync(self, readies: list[Ready]) -> bool:
        """Whether the batch must be on disk before its messages go out.

        A batch whose only change to stable storage is a higher commit index need not wait for
        the disk: the commit index is Raft's volatile state (it is stored only to apply less
        again after a restart, and a node that lost it learns it again from the leader). Such a
        batch is written without an fsync and reaches the disk with the next one; records are
        appended in order, so a commit index on disk never names entries that are not.
        """
        needed = False
        for ready in readies:
            if ready.entries or ready.truncate_from is not None or ready.snapshot is not None:
                needed = True
            hard_state = ready.hard_state
            if hard_state is not None:
                vote = (hard_state.term, hard_state.vote)
                if vote != self._durable_vote:
                    needed = True
                    self._durable_vote = vote
        return needed

    def _persist(self, readies: list[Ready]) -> None:
        for ready in readies:
            if ready.must_persist:
                self._storage.write(ready)
        self._storage.sync()

    def _apply(self, ready: Ready) -> None:
        snapshot = ready.snapshot
        if snapshot is not None and snapshot.index > self.applied_index:
            self._machine.restore(snapshot)
            self.applied_index = snapshot.index
            for index in [index for index in self._proposals if index <= snapshot.index]:
                _, future = self._proposals.pop(index)
                _fail(future, OutcomeUnknown("replaced by a snapshot before its reply was known"))
        for entry in ready.committed:
            if entry.index <= self.applied_index:
                continue
            reply = self._machine.apply(entry)
            self.applied_index = entry.index
            self._recent_replies.append((entry.index, entry.term, reply))
            pending = self._proposals.pop(entry.index, None)
            if pending is not None:
                term, future = pending
                if term == entry.term:
                    reply = _copy_reply(reply)
                    if isinstance(reply, dict):
                        # Where it was applied: a follower that forwarded the command waits
                        # to apply it too before its client hears the outcome.
                        reply["index"] = entry.index
                    if not future.done():
                        future.set_result(reply)
                else:
                    _fail(future, ProposalLost("another leader's entry took its place"))
        for read in ready.read_states:
            waiting = self._reads.pop(read.context, None)
            if waiting is None or waiting.done():
                continue
            if read.index is None:
                waiting.set_exception(ReadAborted("leadership changed during the read"))
            else:
                waiting.set_result(read.index)

    def _release_applied_waiters(self) -> None:
        waiters = self._applied_waiters
        while waiters and waiters[0][0] <= self.applied_index:
            _, _, future = heapq.heappop(waiters)
            if not future.done():
                future.set_result(None)

    def _maybe_snapshot(self) -> None:
        held = self.applied_index - self.raft.first_index + 1
        if held >= self._settings.snapshot_every:
            self._take(self.raft.compact(self.applied_index, self._machine.snapshot()))

    def _notice_changes(self) -> None:
        raft = self.raft
        view = (raft.role, raft.leader_id, raft.term, raft.voters)
        if view != self._last_view:
            previous_leader = self._last_view[1] if self._last_view is not None else None
            if view[1] != previous_leader:
                log.info("Raft: leader is now %s (term %d)", view[1] or "unknown", view[2])
            self._last_view = view
            changed, self._changed = self._changed, None
            if changed is not None and not changed.done():
                changed.set_result(None)
            for listener in self.change_listeners:
                listener()


def _last_entry(readies: list[Ready]) -> Entry | None:
    """The last entry the batch left in the log (None if it wrote none or cut them off)."""
    last: Entry | None = None
    for ready in readies:
        if last is not None and (
            (ready.truncate_from is not None and ready.truncate_from <= last.index)
            or (ready.snapshot is not None and ready.snapshot.index >= last.index)
        ):
            last = None
        if ready.entries:
            last = ready.entries[-1]
    return last


def _copy_reply(reply: Any) -> Any:
    # The kept reply stays as the machine gave it; whoever receives it may add to it.
    return dict(reply) if isinstance(reply, dict) else reply


def _new_future() -> asyncio.Future[Any]:
    future = asyncio.get_running_loop().create_future()
    # Whoever asked may have given up waiting (a timeout): a late failure is not an error.
    future.add_done_callback(lambda done: done.cancelled() or done.exception())
    return future


def _fail(future: asyncio.Future[Any], error: BaseException) -> None:
    if not future.done():
        future.set_exception(error)
