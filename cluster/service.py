"""A node's part in its cluster: Raft-replicated metadata and gossip membership over gRPC.

`ClusterService` is what the node starts and stops. Metadata changes go to the leader wherever
they are submitted; a node that cannot reach a majority says so ("no quorum") instead of
waiting forever. Reads after `read_barrier()` see every change committed before it.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, TypeVar

from cluster.address_book import AddressBook
from cluster.errors import (
    ClusterUnavailable,
    NoQuorum,
    NotLeaderHere,
    OutcomeUnknown,
    ProposalLost,
)
from cluster.forwarding import Forwarder, ForwardingStatistics, NotForwarded
from cluster.gossip import MemberStatus, Swim
from cluster.gossip.driver import GossipDriver, ReportSource
from cluster.joining import RemovedFromCluster, join_through_seeds
from cluster.leader import LeaderOps
from cluster.metadata import MetadataState, encode_command
from cluster.metadata_machine import EffectListener, MetadataMachine
from cluster.node_loop import RaftLoop
from cluster.raft import ConfOp, FileStorage, RaftError, RaftNode, Role, StorageState
from cluster.raft_wire import decode_batch
from cluster.remote import Membership, PeerUnreachable, Remote
from cluster.rpc import ClusterServicer, NotAMember
from cluster.secret import Caller, CallSigner, CallVerifier
from cluster.settings import ClusterSettings
from cluster.status import ClusterStatus
from cluster.transport import PeerChannels, RaftStreams, ServiceInstaller, start_server
from proto import raft_pb2
from proto.metadata_schema import (
    AddMember,
    Command,
    Effect,
    MemberAdded,
    MemberRecord,
    MemberRemoved,
    RemoveMember,
)

log = logging.getLogger(__name__)

T = TypeVar("T")

# How often a node checks that the members table has its current address.
_REGISTER_EVERY_SECONDS = 1.0
# How long a node waits for leadership to move on a graceful stop.
_HANDOVER_SECONDS = 3.0


class ClusterService:
    """Start it, submit metadata commands through it, read its status, stop it."""

    def __init__(
        self,
        settings: ClusterSettings,
        report_source: ReportSource | None = None,
        services: Sequence[ServiceInstaller] = (),
    ) -> None:
        self.settings = settings
        self._services = services
        self.name = settings.node_name
        self._report_source = report_source
        self.machine = MetadataMachine()
        self.port = 0
        self.address = ""
        self._removed = False
        # Peers may call as soon as the server listens, before the rest is built.
        self._started = False
        self._stopping = False
        self._background: list[asyncio.Task[None]] = []
        self._server: Any = None
        # Set once the Raft loop exists: a start that failed before it has only a server to stop.
        self._has_loop = False
        self._gossip: GossipDriver | None = None
        self._book = AddressBook(self.name, "")
        # Awaited by the leader before it admits a node (the node's definitions go first).
        self.before_admitting: Callable[[], Awaitable[None]] | None = None
        # Told of every authenticated call from another node: that node is up.
        self.heard_from: Callable[[str], None] = lambda node: None
        # Told the resources in alarm on the other running nodes each time that set changes.
        self.peer_alarms_changed: Callable[[frozenset[str]], None] = lambda alarms: None
        # Set in start(), used by everything after it.
        self._channels: PeerChannels
        self._streams: RaftStreams
        self._remote: Remote
        self._loop: RaftLoop
        self._leader: LeaderOps
        self._forwarder: Forwarder

    # -- lifecycle -----------------------------------------------------------------------

    async def start(self) -> None:
        """Recover, listen, and take part: bootstrap, rejoin, or join through the seeds."""
        settings = self.settings
        storage = await asyncio.to_thread(FileStorage, settings.raft_dir)
        stored = storage.load()
        fresh = _is_blank(stored)
        applied = 0
        if stored.snapshot is not None:
            self.machine.restore(stored.snapshot)
            applied = stored.snapshot.index
        servicer = ClusterServicer(self, lambda: self._gossip)
        self._server, self.port = await start_server(
            servicer,
            settings.bind,
            settings.port,
            CallVerifier(settings.secret),
            self._on_caller,
            settings.tls,
            self._services,
        )
        self.address = settings.advertised(self.port)
        self._book.set_own_address(self.address)
        self._channels = PeerChannels(
            CallSigner(settings.secret, self.name, self.address), settings.tls
        )
        self._streams = RaftStreams(self.name, self._book, self._channels)
        self._remote = Remote(self._channels)
        bootstrap = fresh and not settings.join
        raft = RaftNode(self.name, [self.name] if bootstrap else [], stored, settings.raft)
        self._loop = RaftLoop(
            raft, storage, self.machine, self._streams.send, settings.loop, applied
        )
        self._has_loop = True
        self._leader = LeaderOps(self._loop, self.machine, self._book, self._quorum_text)
        self._forwarder = Forwarder(self._loop, self._streams, self._quorum_text)
        self.machine.on_effects(self._on_effects)
        self.machine.on_reset(lambda _state: self._refresh_members())
        self._loop.change_listeners.append(self._refresh_members)
        # Each run starts above the one before (the clock's milliseconds): a refutation raises
        # the number by one, so a run would have to be refuted a thousand times a second to
        # reach the next run's.
        swim = Swim(
            self.name,
            incarnation=time.time_ns() // 1_000_000,
            config=settings.gossip,
            rng=random.Random(),
        )
        # A quiet Raft group has no heartbeats to miss: gossip's failure detector and broken
        # streams tell the core when a peer may be gone.
        swim.lost_listeners.append(self._loop.peer_lost)
        self._streams.stream_down_listeners.append(self._loop.peer_lost)
        self._gossip = GossipDriver(
            swim,
            self._channels,
            self._book,
            self._report_source,
            on_peer_alarms=lambda alarms: self.peer_alarms_changed(alarms),
        )
        self._refresh_members()
        self._gossip.start()
        self._loop.start()
        if bootstrap:
            log.info("node %s starts a new cluster", self.name)
        if raft.voters == (self.name,):
            self._loop.campaign()  # alone: no need to wait for an election timeout
        if settings.join:
            self._spawn(self._join(fresh), "cluster-join")
        self._spawn(self._keep_registered(), "cluster-register")
        self._started = True
        log.info("cluster service of %s listening on %s", self.name, self.address)

    async def stop(self) -> None:
        """Hand leadership over if this node leads, then leave the network."""
        self._stopping = True
        for task in self._background:
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        self._background.clear()
        if not self._has_loop:
            if self._server is not None:
                await self._server.stop(0)
            return
        await self.hand_over_leadership()
        if self._gossip is not None:
            await self._gossip.stop()
        self._forwarder.stop()
        await self._loop.stop()
        await self._streams.close()
        await self._channels.close()
        if self._server is not None:
            await self._server.stop(0)

    # -- the node's API ------------------------------------------------------------------

    @property
    def peers(self) -> PeerChannels:
        """Signed channels to the other nodes, for services beside the cluster's own."""
        return self._channels

    def address_of(self, name: str) -> str | None:
        """Where node `name` listens for cluster traffic, if known."""
        return self._book.get(name)

    @property
    def metadata(self) -> MetadataState:
        """The replicated metadata as applied here (call `read_barrier` first to be current)."""
        return self.machine.state

    @property
    def applied_index(self) -> int:
        """The index of the last metadata change applied on this node."""
        return self._loop.applied_index

    async def wait_applied(self, index: int) -> None:
        """Return once this node has applied the metadata changes up to `index`."""
        await self._loop.wait_applied(index)

    def on_effects(self, listener: EffectListener) -> None:
        """Call `listener(effects)` for the effects of every command applied on this node."""
        self.machine.on_effects(listener)

    async def submit(self, command: Command, timeout: float | None = None) -> dict[str, Any]:
        """Apply a metadata command through the leader; returns its reply.

        Raises NoQuorum when no majority answers within `timeout`, ClusterUnavailable for
        other refusals (this node was removed, ...).
        """
        self._check_not_removed()
        data = encode_command(command)  # refuses what cannot be encoded, before any network trip
        timeout = timeout or self.settings.submit_timeout
        deadline = asyncio.get_running_loop().time() + timeout
        leader = self._leader_to_forward_to()
        if leader is not None:
            try:
                # Applied here already: the reply is this node's own.
                return await self._forwarder.submit(leader, data, timeout)
            except (NotForwarded, ProposalLost):
                # Never applied: the Submit path follows the leader wherever it went.
                timeout = max(deadline - asyncio.get_running_loop().time(), 0.001)
        reply = await self._on_leader(
            "the metadata change",
            lambda left: self._leader.submit(data, left),
            lambda address, left: self._remote.submit(address, data, left),
            timeout,
        )
        index = reply.get("index")
        if isinstance(index, int) and index > self._loop.applied_index:
            # Read-your-writes: the change is applied here before the caller hears of it.
            try:
                async with asyncio.timeout_at(max(deadline, asyncio.get_running_loop().time() + 1)):
                    await self._loop.wait_applied(index)
            except TimeoutError:
                raise ClusterUnavailable(
                    f"node {self.name} has not caught up with the leader (entry {index}) "
                    f"within {timeout:.1f}s",
                    kind="timeout",
                ) from None
        return reply

    def _leader_to_forward_to(self) -> str | None:
        """The leader this voter may send a command or a read to on its Raft stream, if any."""
        raft = self._loop.raft
        if raft.role is Role.LEADER or self.name not in raft.voters:
            return None
        if not self._forwarder.usable(raft.leader_id):
            return None
        return raft.leader_id

    def forwarding_statistics(self) -> ForwardingStatistics:
        """How many metadata commands this node forwarded to the leader on its Raft stream."""
        return self._forwarder.statistics()

    @property
    def alone(self) -> bool:
        """Whether this node is the cluster's only voter (its model is then always current)."""
        return self._loop.raft.voters == (self.name,)

    async def read_barrier(self, timeout: float | None = None) -> None:
        """Wait until this node has applied every change committed before the call."""
        self._check_not_removed()
        timeout = timeout or self.settings.submit_timeout
        deadline = asyncio.get_running_loop().time() + timeout
        index: int | None = None
        leader = self._leader_to_forward_to()
        if leader is not None:
            try:
                index = await self._forwarder.read_index(leader, timeout)
            except (NotForwarded, OutcomeUnknown):
                timeout = max(deadline - asyncio.get_running_loop().time(), 0.001)
        if index is None:
            index = await self._on_leader(
                "the read barrier", self._leader.read_index, self._remote.read_index, timeout
            )
        try:
            async with asyncio.timeout_at(deadline):
                await self._loop.wait_applied(index)
        except TimeoutError:
            raise ClusterUnavailable(
                f"node {self.name} has not caught up with the leader (entry {index}) "
                f"within {timeout:.1f}s",
                kind="timeout",
            ) from None

    async def forget_node(self, name: str, timeout: float | None = None) -> None:
        """Remove `name` from the cluster (forget_cluster_node); it stays out."""
        timeout = timeout or self.settings.submit_timeout * 2
        await self._on_leader(
            "forget_cluster_node",
            lambda left: self.forget_here(name, left),
            lambda address, left: self._remote.forget(address, name, left),
            timeout,
        )

    def announce_report(self) -> None:
        """Send this node's gossip report to every member now (its alarms changed)."""
        if self._gossip is not None:
            self._gossip.announce()

    def status(self) -> ClusterStatus:
        """This node's view of the cluster."""
        raft = self._loop.status()
        members = {record.name: record.address for record in self.machine.state.members()}
        return ClusterStatus(
            node=self.name,
            address=self.address,
            role=raft.role.value,
            leader=raft.leader,
            term=raft.term,
            commit_index=raft.commit_index,
            applied_index=self._loop.applied_index,
            voters=raft.voters,
            members=members,
            gossip=self._gossip.view() if self._gossip is not None else {},
            removed=self._removed,
            quiet=raft.quiet,
        )

    # -- what peers ask of this node (cluster.rpc.LeaderSide) ----------------------------

    def admits(self, caller: Caller) -> bool:
        """Whether `caller` may submit through this node: a member, or a tool (a caller that
        gives no address of its own, such as a benchmark)."""
        if not self._started or not caller.address:
            return True  # (not started: the operation itself answers "not the leader")
        return caller.node in self._loop.raft.voters or self._registered(caller.node)

    def receive_raft(self, caller: Caller, batch: raft_pb2.RaftBatch) -> None:
        if not self._started:
            return  # Raft sends again what matters
        if batch.dst != self.name or batch.src != caller.node:
            # The sender has a stale address for the destination; it learns when that node calls.
            log.debug("ignoring a Raft batch %s->%s from %s", batch.src, batch.dst, caller.node)
            self._forwarder.refuse(caller.node, batch.forwarded, "not the node addressed")
            return
        voters = self._loop.raft.voters
        if self.name in voters and batch.src not in voters:
            if self._registered(batch.src):
                # Joining or leaving: this node's log has not caught up with that yet.
                self._forwarder.refuse(batch.src, batch.forwarded, "not a voter")
                return
            # A node outside the cluster (forgotten) must not disturb it; the stream is closed
            # with this reason, which the sender logs.
            raise NotAMember(f"node {batch.src} is not a member of the cluster of {self.name}")
        if batch.outcomes:
            # Before the messages: the entries they carry may complete these commands.
            self._forwarder.on_outcomes(batch.outcomes)
        if batch.forwarded:
            self._forwarder.on_forwarded(batch.src, batch.forwarded)
        messages = decode_batch(batch)
        if messages:
            self._loop.deliver(messages)

    async def submit_here(self, command: Command, timeout: float) -> dict[str, Any]:
        self._require_started()
        return await self._leader.submit(encode_command(command), timeout)

    async def read_index_here(self, timeout: float) -> int:
        self._require_started()
        return await self._leader.read_index(timeout)

    async def join_here(self, name: str, address: str, fresh: bool, timeout: float) -> Membership:
        self._require_started()
        self._leader.require_leader()
        if self.before_admitting is not None:
            await self.before_admitting()
        membership = await self._leader.join(name, address, fresh, timeout)
        log.info("node %s at %s is a member", name, address)
        return membership

    async def forget_here(self, name: str, timeout: float) -> Membership:
        self._require_started()
        deadline = asyncio.get_running_loop().time() + timeout
        self._leader.require_leader()
        current = self._leader.membership()
        if name not in current.voters and name not in current.members:
            raise ClusterUnavailable("The node selected is not in the cluster.", kind="not_found")
        await self._leader.change_voters(ConfOp.REMOVE, name, timeout)
        log.info("node %s is no longer a voter", name)
        if name in current.members:
            # When this node removed itself it is no longer the leader: submit routes it.
            left = max(deadline - asyncio.get_running_loop().time(), 0.5)
            await self.submit(RemoveMember(name=name), left)
        return self._leader.membership()

    # -- internals -----------------------------------------------------------------------

    async def _on_leader(
        self,
        what: str,
        local: Callable[[float], Awaitable[T]],
        remote: Callable[[str, float], Awaitable[T]],
        timeout: float | None,
    ) -> T:
        """Run `local` if this node leads, else `remote` on the leader; follow redirects and
        leader changes until `timeout`, then fail with NoQuorum."""
        timeout = timeout or self.settings.submit_timeout
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        hint: str | None = None
        problem = "no leader is known"
        while True:
            left = deadline - loop.time()
            if left <= 0:
                raise NoQuorum(
                    f"{what} failed: no quorum within {timeout:.1f}s: {problem}; "
                    f"{self._quorum_text()}. Metadata cannot change until a majority of the "
                    "members is reachable."
                )
            raft = self._loop.raft
            if raft.role is Role.LEADER:
                try:
                    return await local(left)
                except NotLeaderHere:
                    await self._wait_change(min(left, 0.05))
                    continue
            leader = hint or raft.leader_id
            hint = None
            if leader is None or leader == self.name:
                problem = "no leader is known"
                await self._wait_change(min(left, 0.25))
                continue
            address = self._book.get(leader)
            if address is None:
                problem = f"the address of leader {leader} is not known"
                await self._wait_change(min(left, 0.25))
                continue
            try:
                return await remote(address, left)
            except PeerUnreachable:
                problem = f"leader {leader} at {address} does not answer"
                await self._wait_change(min(left, 0.25))
            except ClusterUnavailable as refusal:
                if refusal.kind == "removed" and not self._removed:
                    self._removed = True
                    log.error("the cluster refused this node: %s", refusal.reason)
                raise
            except NotLeaderHere as redirect:
                problem = f"{leader} is no longer the leader"
                if redirect.leader and redirect.leader_address:
                    self._book.set(redirect.leader, redirect.leader_address)
                    hint = redirect.leader if redirect.leader != leader else None
                else:
                    await self._wait_change(min(left, 0.1))

    async def _wait_change(self, seconds: float) -> None:
        # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancellation that
        # arrives as the change does, and a stopping node would wait for its tasks forever.
        try:
            async with asyncio.timeout(seconds):
                await self._loop.wait_changed()
        except TimeoutError:
            pass

    def _quorum_text(self) -> str:
        return self.status().quorum_text()

    def _require_started(self) -> None:
        if not self._started:
            raise NotLeaderHere(None, None)

    def _check_not_removed(self) -> None:
        if self._removed:
            raise ClusterUnavailable(
                f"node {self.name} was removed from the cluster (forget_cluster_node)",
                kind="removed",
            )

    def _on_caller(self, caller: Caller) -> None:
        if caller.address:
            self._book.set(caller.node, caller.address)
        self.heard_from(caller.node)

    def _on_effects(self, effects: list[Effect]) -> None:
        changed = False
        for effect in effects:
            if isinstance(effect, MemberAdded):
                self._book.set(effect.name, effect.address)
                changed = True
            elif isinstance(effect, MemberRemoved):
                if effect.name == self.name:
                    self._removed = True
                    log.warning("this node (%s) was removed from the cluster", self.name)
                else:
                    self._book.forget(effect.name)
                changed = True
        if changed:
            self._refresh_members()

    def _refresh_members(self) -> None:
        names = {record.name for record in self.machine.state.members()}
        for record in self.machine.state.members():
            self._book.set(record.name, record.address)
        names |= set(self._loop.raft.voters)
        if self._removed:
            names.discard(self.name)
        if self._gossip is not None:
            self._gossip.set_members(names)

    def _spawn(self, coroutine: Coroutine[Any, Any, None], name: str) -> None:
        self._background.append(asyncio.get_running_loop().create_task(coroutine, name=name))

    async def _join(self, fresh: bool) -> None:
        try:
            await join_through_seeds(self._remote, self._book, self.settings.join, fresh)
        except RemovedFromCluster as error:
            self._removed = True
            log.error("the cluster refused this node: %s", error)

    async def _keep_registered(self) -> None:
        """Keep this node's current address in the members table (ports may change)."""
        while not self._stopping:
            await self._wait_change(_REGISTER_EVERY_SECONDS)
            if self._removed or self.name not in self._loop.raft.voters:
                continue
            if self._registered_address() == self.address:
                continue
            if self._loop.raft.leader_id is None:
                continue
            command = AddMember(name=self.name, address=self.address)
            try:
                await self.submit(command, timeout=self.settings.submit_timeout)
            except (ClusterUnavailable, NotLeaderHere, OutcomeUnknown) as error:
                # The next round checks again.
                log.debug("cannot register this node's address yet: %s", error)

    def _registered_address(self) -> str | None:
        record = self._member_record(self.name)
        return record.address if record is not None else None

    def _registered(self, name: str) -> bool:
        return self._member_record(name) is not None

    def _member_record(self, name: str) -> MemberRecord | None:
        return next((r for r in self.machine.state.members() if r.name == name), None)

    async def hand_over_leadership(self) -> None:
        """Ask a live, connected voter to take over; try the next one if it does not."""
        if not self._has_loop:
            return
        raft = self._loop.raft
        if raft.role is not Role.LEADER or len(raft.voters) < 2:
            return
        view = self._gossip.view() if self._gossip is not None else {}
        unreachable = self._streams.unreachable()
        candidates = [
            voter
            for voter in raft.voters
            if voter != self.name
            and voter not in unreachable
            and voter in view
            and view[voter].status is MemberStatus.ALIVE
        ]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + _HANDOVER_SECONDS
        # The core gives up on a transfer after an election timeout; wait about that long.
        per_target = self.settings.loop.tick_seconds * self.settings.raft.election_tick * 1.2
        for target in candidates:
            if raft.role is not Role.LEADER or loop.time() >= deadline:
                break
            try:
                self._loop.transfer_leadership(target)
            except RaftError as error:
                log.warning("cannot hand leadership to %s: %s", target, error)
                continue
            give_up = min(deadline, loop.time() + per_target)
            while raft.role is Role.LEADER and loop.time() < give_up:
                await self._wait_change(give_up - loop.time())
        if raft.role is Role.LEADER:
            log.warning("no member took leadership over; stopping as leader")
        else:
            log.info("handed leadership over to %s", raft.leader_id or "another member")


def _is_blank(stored: StorageState) -> bool:
    return stored.snapshot is None and not stored.entries and stored.hard_state.term == 0
