"""A deterministic simulated Raft cluster: in-process network, seeded faults, invariant checks."""

from __future__ import annotations

import hashlib
import heapq
import random
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Protocol

from cluster.raft import (
    ConfOp,
    Entry,
    EntryKind,
    Message,
    NotLeader,
    ProposalRejected,
    RaftConfig,
    RaftNode,
    ReadState,
    Ready,
    Role,
)
from tests.cluster.invariants import RaftInvariants, SafetyViolation
from tests.cluster.sim_disks import MemoryDisk, SimDisk

_DIGEST_SIZE = 16


class StateMachine(Protocol):
    """The replicated application: deterministic apply, snapshot and restore."""

    def apply_command(self, data: bytes) -> object:
        """Apply one committed command; returns the reply for the client that proposed it."""
        ...

    def snapshot_bytes(self) -> bytes:
        """The whole state."""
        ...


class NullMachine:
    """An application that keeps nothing; the simulation's digest chain stands in for state."""

    def apply_command(self, data: bytes) -> object:
        return None

    def snapshot_bytes(self) -> bytes:
        return b""


class Workload(Protocol):
    """Drives clients against the simulated cluster and observes replies."""

    def on_tick(self, sim: Simulation) -> None: ...

    def on_applied(self, sim: Simulation, node_id: str, entry: Entry, reply: object) -> None: ...

    def on_read_state(self, sim: Simulation, node_id: str, read: ReadState) -> None: ...

    def on_crash(self, sim: Simulation, node_id: str) -> None: ...


@dataclass(frozen=True)
class Faults:
    """Per-tick (or per-message) probabilities of each fault; all zero means a perfect world."""

    drop: float = 0.05
    duplicate: float = 0.03
    max_delay: int = 3
    partition: float = 0.02
    heal: float = 0.04
    crash: float = 0.01
    # Faults aimed at the leader, which make terms and divergent log tails pile up.
    crash_leader: float = 0.005
    isolate_leader: float = 0.005
    restart: float = 0.08
    # Per batch that must be persisted: crash while persisting or sending it.
    crash_mid_ready: float = 0.002
    skip_tick: float = 0.05
    # The failure detector (RaftConfig.quiesce): per tick and pair, the chance that a node
    # hears that a peer it cannot reach is suspected, and that it suspects one it can reach.
    detect: float = 0.2
    false_suspicion: float = 0.002

    @staticmethod
    def none() -> Faults:
        """Reliable, in-order-ish delivery and no crashes (delays still vary)."""
        return Faults(
            drop=0,
            duplicate=0,
            max_delay=2,
            partition=0,
            heal=0,
            crash=0,
            crash_leader=0,
            isolate_leader=0,
            restart=0,
            crash_mid_ready=0,
            skip_tick=0,
            false_suspicion=0,
        )


@dataclass(frozen=True)
class Activity:
    """Per-tick probabilities of what operators and clients do."""

    propose: float = 0.3
    # Up to this many commands per proposal event, so deposed leaders leave longer tails.
    burst: int = 1
    compact_after: int = 12
    compact: float = 0.1
    transfer: float = 0.01
    membership: float = 0.0


@dataclass
class SimNode:
    """One simulated server: durable storage survives crashes, everything else does not."""

    id: str
    bootstrap_peers: tuple[str, ...]
    storage: SimDisk = field(default_factory=MemoryDisk)
    raft: RaftNode | None = None
    machine: StateMachine = field(default_factory=NullMachine)
    applied_index: int = 0
    digest: bytes = b"\0" * _DIGEST_SIZE
    incarnation: int = 0
    was_quiet: bool = False

    @property
    def up(self) -> bool:
        return self.raft is not None


class Simulation:
    """Runs one seeded schedule; every random choice comes from `rng`, so a seed replays exactly."""

    def __init__(
        self,
        seed: int,
        members: int = 3,
        spares: int = 0,
        config: RaftConfig | None = None,
        faults: Faults | None = None,
        activity: Activity | None = None,
        workload: Workload | None = None,
        new_machine: Callable[[], StateMachine] = NullMachine,
        restore_machine: Callable[[bytes], StateMachine] | None = None,
        new_disk: Callable[[str], SimDisk] = lambda node_id: MemoryDisk(),
    ) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        # The failure detector draws from its own stream: schedules without quiescence stay
        # what they were before it existed.
        self._detector_rng = random.Random(f"{seed}/detector")
        self.config = config or RaftConfig(election_tick=10, heartbeat_tick=2)
        self.faults = faults or Faults()
        self.activity = activity or Activity()
        self.workload = workload
        self._new_machine = new_machine
        self._restore_machine = restore_machine or (lambda data: new_machine())
        self.now = 0
        self.invariants = RaftInvariants()
        self.trace: deque[str] = deque(maxlen=60)
        # How often each fault and notable event happened, to show the schedules are rough.
        self.stats: Counter[str] = Counter()
        self._in_flight: list[tuple[int, float, int, Message]] = []
        self._sent = 0
        self._group: dict[str, int] = {}
        self._next_command = 0
        self.proposed: list[bytes] = []
        self.applied_at: dict[bytes, int] = {}
        ids = [f"n{i}" for i in range(1, members + spares + 1)]
        initial = tuple(ids[:members])
        self.nodes: dict[str, SimNode] = {
            node_id: SimNode(node_id, initial if node_id in initial else (), new_disk(node_id))
            for node_id in ids
        }
        for node in self.nodes.values():
            self._start(node)

    # -- the schedule --------------------------------------------------------------------

    def run(self, ticks: int) -> None:
        """Run `ticks` ticks of faults and activity."""
        for _ in range(ticks):
            self.tick()

    def tick(self) -> None:
        """One tick: faults and activity, a clock tick on each live node, then due messages."""
        self.now += 1
        self._inject_faults()
        self._detect_failures()
        self._act()
        if self.workload is not None:
            self.workload.on_tick(self)
        for node in self._shuffled(self.live_nodes()):
            if node.up and self.rng.random() >= self.faults.skip_tick:
                assert node.raft is not None
                self._handle(node, node.raft.tick())
        self._deliver_due()

    def heal(self) -> None:
        """End all faults: reconnect everyone, restart crashed nodes, stop losing messages."""
        self.faults = Faults.none()
        # Keep the background load well below what the slowest configuration can replicate.
        self.activity = replace(
            self.activity,
            propose=min(self.activity.propose, 0.05),
            burst=1,
            transfer=0.0,
            membership=0.0,
        )
        self._group.clear()
        self._note("heal")
        for node in self.nodes.values():
            if not node.up:
                self._start(node)

    def wait_until(self, predicate: Callable[[], bool], max_ticks: int) -> bool:
        """Tick until `predicate` holds, at most `max_ticks` ticks; whether it held."""
        for _ in range(max_ticks):
            if predicate():
                return True
            self.tick()
        return predicate()

    def check_liveness(self, commands: int = 3, max_ticks: int = 400) -> None:
        """After `heal`: a leader emerges and commands proposed to it commit on every voter.

        Like a real client, a command whose leader was deposed before it committed is proposed
        again (as a new command); the whole check is bounded by `max_ticks`.
        """
        deadline = self.now + max_ticks
        done = 0
        while done < commands:
            if not self.wait_until(lambda: self.stable_leader() is not None, deadline - self.now):
                self.fail(f"no stable leader within {max_ticks} ticks after healing")
            leader = self.stable_leader()
            assert leader is not None
            index = self.propose(leader.id)
            if index is None:
                self.tick()
                continue
            command = self.proposed[-1]
            patience = min(5 * self.config.election_tick, max(deadline - self.now, 0))
            if self.wait_until(lambda c=command: self._applied_by_all_voters(c), patience):  # type: ignore[misc]
                done += 1
            elif self.now >= deadline:
                self.fail(f"only {done} of {commands} commands committed after healing")
        self.invariants.check_logs_match([n.raft for n in self.live_nodes() if n.raft])

    def _applied_by_all_voters(self, command: bytes) -> bool:
        index = self.applied_at.get(command)
        leader = self.stable_leader()
        if index is None or leader is None or leader.raft is None:
            return False
        return all(self.nodes[voter].applied_index >= index for voter in leader.raft.voters)

    # -- queries and operations used by workloads ----------------------------------------

    def live_nodes(self) -> list[SimNode]:
        return [node for node in self.nodes.values() if node.up]

    def leaders(self) -> list[RaftNode]:
        return [
            node.raft
            for node in self.nodes.values()
            if node.raft is not None and node.raft.role is Role.LEADER
        ]

    def stable_leader(self) -> SimNode | None:
        """A live leader that no live voter of its configuration has seen a newer term than."""
        best: SimNode | None = None
        for node in self.live_nodes():
            raft = node.raft
            if raft is None or raft.role is not Role.LEADER:
                continue
            if best is not None and best.raft is not None and best.raft.term >= raft.term:
                continue
            voters = [self.nodes[v].raft for v in raft.voters if self.nodes[v].raft is not None]
            if all(voter.term <= raft.term for voter in voters if voter is not None):
                best = node
        return best

    def propose(self, node_id: str, data: bytes | None = None, count: int = 1) -> int | None:
        """Propose on `node_id` (`count` new commands at once unless `data` is given).

        Returns the index of the last new entry, or None when refused.
        """
        node = self.nodes[node_id]
        if node.raft is None:
            return None
        commands = [data] if data is not None else [self._new_command() for _ in range(count)]
        try:
            ready = node.raft.propose_many(commands)
        except (NotLeader, ProposalRejected):
            return None
        self.proposed.extend(commands)
        index = ready.entries[-1].index
        self._note(
            f"{node_id} proposed {len(commands)} command(s), last {commands[-1]!r} at {index}"
        )
        self._handle(node, ready)
        return index

    def _new_command(self) -> bytes:
        self._next_command += 1
        return b"c%d" % self._next_command

    def read_index(self, node_id: str, context: bytes) -> bool:
        """Ask `node_id` for a ReadIndex; False when it is not the leader."""
        node = self.nodes[node_id]
        if node.raft is None:
            return False
        try:
            ready = node.raft.read_index(context)
        except NotLeader:
            return False
        self._handle(node, ready)
        return True

    def fail(self, reason: str) -> None:
        """Stop the run with `reason`, the seed and the last events."""
        events = "\n  ".join(self.trace)
        raise AssertionError(
            f"seed {self.seed} at tick {self.now}: {reason}\nlast events:\n  {events}"
        )

    # -- nodes ---------------------------------------------------------------------------

    def _start(self, node: SimNode) -> None:
        node.incarnation += 1
        stored = node.storage.load()
        rng = random.Random(f"{self.seed}/{node.id}/{node.incarnation}")
        node.raft = RaftNode(node.id, node.bootstrap_peers, stored, self.config, rng)
        if stored.snapshot is not None:
            self._restore(node, stored.snapshot.index, stored.snapshot.data)
        else:
            node.machine = self._new_machine()
            node.applied_index = 0
            node.digest = b"\0" * _DIGEST_SIZE
        self._note(f"{node.id} started (incarnation {node.incarnation})")
        self._handle(node, node.raft.ready())

    def _crash(self, node: SimNode) -> None:
        node.raft = None
        self.stats["crash"] += 1
        self._note(f"{node.id} crashed")
        if self.workload is not None:
            self.workload.on_crash(self, node.id)

    def _restore(self, node: SimNode, index: int, data: bytes) -> None:
        digest, state = data[:_DIGEST_SIZE], data[_DIGEST_SIZE:]
        self.invariants.on_restored(node.id, index, digest)
        node.machine = self._restore_machine(state)
        node.applied_index = index
        node.digest = digest

    def _handle(self, node: SimNode, ready: Ready) -> None:
        """Persist, send, apply, then check every invariant."""
        raft = node.raft
        assert raft is not None
        try:
            self.invariants.after_step(raft, ready, self.leaders())
        except SafetyViolation as violation:
            self.fail(str(violation))
        if ready.must_persist and self.rng.random() < self.faults.crash_mid_ready:
            self._crash_mid_ready(node, ready)
            return
        node.storage.persist(ready)
        if ready.truncate_from is not None:
            self.stats["truncation"] += 1
        for message in ready.messages:
            self._send(message)
        if ready.snapshot is not None and ready.snapshot.index > node.applied_index:
            self.stats["snapshot_installed"] += 1
            self._restore(node, ready.snapshot.index, ready.snapshot.data)
        for entry in ready.committed:
            self._apply(node, entry)
        if self.workload is not None:
            for read in ready.read_states:
                self.workload.on_read_state(self, node.id, read)
        if raft.quiet and not node.was_quiet:
            self.stats["went_quiet"] += 1
        node.was_quiet = raft.quiet

    def _apply(self, node: SimNode, entry: Entry) -> None:
        if entry.index != node.applied_index + 1:
            self.fail(f"{node.id} applies {entry.index} after {node.applied_index}")
        reply = node.machine.apply_command(entry.data) if entry.kind is EntryKind.NORMAL else None
        node.digest = hashlib.blake2b(
            node.digest + b"%d:%d:" % (entry.term, entry.kind) + entry.data,
            digest_size=_DIGEST_SIZE,
        ).digest()
        node.applied_index = entry.index
        try:
            self.invariants.on_applied(node.id, entry.index, node.digest)
        except SafetyViolation as violation:
            self.fail(str(violation))
        if entry.kind is EntryKind.NORMAL:
            self.applied_at.setdefault(entry.data, entry.index)
        if self.workload is not None:
            self.workload.on_applied(self, node.id, entry, reply)

    def _crash_mid_ready(self, node: SimNode, ready: Ready) -> None:
        """Crash while handling `ready`: a prefix of its writes lands, maybe some messages go."""
        complete = node.storage.persist_torn(ready, self.rng)
        if complete:
            # Fully persisted: the crash hits while sending.
            for message in ready.messages[: self.rng.randrange(len(ready.messages) + 1)]:
                self._send(message)
        self.stats["crash_mid_batch"] += 1
        self._note(f"{node.id} crashed handling a batch (all written: {complete})")
        self._crash(node)

    # -- network -------------------------------------------------------------------------

    def _send(self, message: Message) -> None:
        if self.rng.random() < self.faults.drop:
            self.stats["dropped"] += 1
            return
        copies = 2 if self.rng.random() < self.faults.duplicate else 1
        self.stats["duplicated"] += copies - 1
        for _ in range(copies):
            self._sent += 1
            due = self.now + self.rng.randint(1, max(self.faults.max_delay, 1))
            heapq.heappush(self._in_flight, (due, self.rng.random(), self._sent, message))

    def _deliver_due(self) -> None:
        while self._in_flight and self._in_flight[0][0] <= self.now:
            _, _, _, message = heapq.heappop(self._in_flight)
            node = self.nodes[message.dst]
            if node.raft is None or self._group.get(message.src, 0) != self._group.get(
                message.dst, 0
            ):
                continue
            self._handle(node, node.raft.step(message))

    # -- faults and activity -------------------------------------------------------------

    def _inject_faults(self) -> None:
        rng, faults = self.rng, self.faults
        ids = list(self.nodes)
        if not self._group and rng.random() < faults.partition:
            shuffled = self._shuffled(ids)
            cut = rng.randint(1, len(ids) - 1)
            self._group = {node_id: int(i >= cut) for i, node_id in enumerate(shuffled)}
            self.stats["partition"] += 1
            self._note(f"partition {sorted(shuffled[:cut])} | {sorted(shuffled[cut:])}")
        elif self._group and rng.random() < faults.heal:
            self._group = {}
            self._note("partition healed")
        live = self.live_nodes()
        if live and rng.random() < faults.crash:
            self._crash(rng.choice(live))
        leader = self.stable_leader()
        if leader is not None and rng.random() < faults.crash_leader:
            self._crash(leader)
        elif leader is not None and not self._group and rng.random() < faults.isolate_leader:
            self._group = {node_id: int(node_id == leader.id) for node_id in ids}
            self.stats["partition"] += 1
            self._note(f"partition {leader.id} (leader) from the rest")
        down = [node for node in self.nodes.values() if not node.up]
        if down and rng.random() < faults.restart:
            self._start(rng.choice(down))

    def _detect_failures(self) -> None:
        """What gossip tells each node: peers it cannot reach, after a while, and now and
        then a peer it can (a false suspicion). Only a quiet group listens."""
        if not self.config.quiesce:
            return
        for node in self.live_nodes():
            for peer in self.nodes.values():
                if peer is node:
                    continue
                reachable = peer.up and self._group.get(peer.id, 0) == self._group.get(node.id, 0)
                chance = self.faults.false_suspicion if reachable else self.faults.detect
                if node.raft is not None and self._detector_rng.random() < chance:
                    self.stats["suspected"] += 1
                    self._handle(node, node.raft.peer_lost(peer.id))

    def _act(self) -> None:
        rng, activity = self.rng, self.activity
        live = self.live_nodes()
        if not live:
            return
        if rng.random() < activity.propose:
            # Any node: followers refuse, which exercises NotLeader.
            proposer = rng.choice(live).id
            burst = rng.randint(1, activity.burst)
            if rng.random() < 0.5:
                self.propose(proposer, count=burst)
            else:
                for _ in range(burst):
                    self.propose(proposer)
        for node in live:
            raft = node.raft
            if raft is None:
                continue  # crashed while handling its own compaction above
            if (
                node.applied_index - raft.first_index + 1 >= activity.compact_after
                and rng.random() < activity.compact
            ):
                data = node.digest + node.machine.snapshot_bytes()
                self._note(f"{node.id} compacts to {node.applied_index}")
                self._handle(node, raft.compact(node.applied_index, data))
        leader = self.stable_leader()
        if leader is None or leader.raft is None:
            return
        if rng.random() < activity.transfer:
            others = [v for v in leader.raft.voters if v != leader.id]
            if others:
                target = rng.choice(others)
                self._note(f"{leader.id} transfers leadership to {target}")
                self._try(leader, lambda raft: raft.transfer_leadership(target))
        if rng.random() < activity.membership:
            self._change_membership(leader)

    def _change_membership(self, leader: SimNode) -> None:
        assert leader.raft is not None
        voters = leader.raft.voters
        outsiders = [node_id for node_id in self.nodes if node_id not in voters]
        if outsiders and (len(voters) < 3 or self.rng.random() < 0.5):
            op, target = ConfOp.ADD, self.rng.choice(outsiders)
        elif len(voters) > 1:
            op, target = ConfOp.REMOVE, self.rng.choice(list(voters))
        else:
            return
        self._note(f"{leader.id} proposes {op.value} {target}")
        self._try(leader, lambda raft: raft.propose_conf_change(op, target))

    def _try(self, node: SimNode, call: Callable[[RaftNode], Ready]) -> None:
        assert node.raft is not None
        try:
            ready = call(node.raft)
        except (NotLeader, ProposalRejected) as refusal:
            self._note(f"{node.id} refused: {refusal}")
            return
        self._handle(node, ready)

    def _shuffled(self, items: list[SimNode] | list[str]) -> list:  # type: ignore[type-arg]
        copy = list(items)
        self.rng.shuffle(copy)
        return copy

    def _note(self, event: str) -> None:
        self.trace.append(f"t{self.now}: {event}")


def scenario(seed: int, new_disk: Callable[[str], SimDisk] | None = None) -> Simulation:
    """The seed picks the cluster size, the Raft options and how rough the world is."""
    pick = random.Random(seed * 7919 + 17)
    members = pick.choice([3, 3, 5])
    membership = pick.random() < 0.3
    config = RaftConfig(
        election_tick=10,
        heartbeat_tick=pick.choice([1, 2, 3]),
        pre_vote=pick.random() < 0.8,
        check_quorum=pick.random() < 0.8,
        max_entries_per_message=pick.choice([1, 4, 64]),
        max_inflight=pick.choice([1, 4, 64]),
        snapshot_retry_ticks=15,
    )
    rough = pick.random() < 0.5
    churn = pick.random() < 0.4
    faults = Faults(
        drop=0.15 if rough else 0.03,
        duplicate=0.05,
        max_delay=pick.choice([1, 3, 6, 10]),
        partition=0.03 if rough else 0.01,
        heal=0.04,
        crash=0.02 if rough else 0.005,
        crash_leader=0.03 if churn else 0.002,
        isolate_leader=0.02 if churn else 0.002,
        restart=0.15 if churn else 0.08,
        crash_mid_ready=0.004 if rough else 0.001,
        skip_tick=0.05,
    )
    activity = Activity(
        propose=0.4,
        burst=pick.choice([1, 3, 6]),
        compact_after=pick.choice([5, 15, 40]),
        compact=0.1,
        transfer=0.02,
        membership=0.03 if membership else 0.0,
    )
    # Picked last, so that the seeds' earlier picks stay what they were.
    config = replace(config, quiesce=pick.random() < 0.5)
    return Simulation(
        seed,
        members=members,
        spares=pick.choice([1, 2]) if membership else 0,
        config=config,
        faults=faults,
        activity=activity,
        new_disk=new_disk or (lambda node_id: MemoryDisk()),
    )


def run_seed(
    seed: int, chaos_ticks: int = 250, new_disk: Callable[[str], SimDisk] | None = None
) -> Simulation:
    """One complete schedule: chaos, then healing and a liveness check."""
    sim = scenario(seed, new_disk)
    sim.run(chaos_ticks)
    sim.heal()
    sim.check_liveness()
    return sim
