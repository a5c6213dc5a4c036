"""Simulated clients declaring, deleting and reading queues through the replicated metadata
store."""

from __future__ import annotations

import json
from dataclasses import dataclass

from cluster.metadata import MetadataState
from cluster.metadata.linearizability import Operation
from cluster.raft import Entry, RaftConfig, ReadState
from proto.metadata_schema import (
    AddVhost,
    CommandError,
    QueueRecord,
    canonical,
    command_from_json,
)
from tests.cluster.sim import Activity, Faults, Simulation

VHOST = "/"


class MetadataMachine:
    """The metadata store as the simulation's state machine; replies are keyed by request id."""

    def __init__(self, state: MetadataState | None = None) -> None:
        if state is None:
            state = MetadataState()
            # Every node starts from the same genesis state, as a fresh cluster would.
            state.apply(AddVhost(name=VHOST))
        self.state = state

    def apply_command(self, data: bytes) -> object:
        envelope = json.loads(data)
        try:
            command = command_from_json(envelope["command"])
        except CommandError as error:
            return envelope["request"], {"status": "error", "reason": str(error)}
        reply, _effects = self.state.apply(command)
        return envelope["request"], reply

    def snapshot_bytes(self) -> bytes:
        return self.state.snapshot()

    @classmethod
    def restore(cls, data: bytes) -> MetadataMachine:
        return cls(MetadataState.restore(data))


@dataclass
class _Pending:
    client: str
    request: str
    node: str
    key: str
    input: tuple[object, ...]
    invoked_at: float
    invoked_tick: int
    read_index: int | None = None


def queue_properties(record: QueueRecord | None) -> tuple[object, ...] | None:
    """What the linearizability model compares of a queue record."""
    return None if record is None else ("durable", record.durable)


class QueueClients:
    """Clients that each keep one operation in flight against a node of their choice.

    Writes are proposed on that node (refused unless it leads) and complete when that node
    applies them; reads use ReadIndex, unless `stale_reads` makes them read the node's local
    state directly (a deliberate bug the checker must catch). An operation whose node crashed
    or that waited too long has an unknown outcome.
    """

    def __init__(
        self,
        clients: int = 4,
        names: tuple[str, ...] = ("q0", "q1"),
        rate: float = 0.5,
        timeout_ticks: int = 40,
        stale_reads: bool = False,
    ) -> None:
        self.clients = [f"c{i}" for i in range(clients)]
        self.names = names
        self.rate = rate
        self.timeout_ticks = timeout_ticks
        self.stale_reads = stale_reads
        self.history: list[Operation] = []
        self.stopped = False
        self._pending: dict[str, _Pending] = {}
        # Clients stay with a node until it refuses them or fails, like a real connection.
        self._connections: dict[str, str] = {}
        self._clock = 0
        self._requests = 0

    def on_tick(self, sim: Simulation) -> None:
        for pending in list(self._pending.values()):
            if sim.now - pending.invoked_tick > self.timeout_ticks:
                self._finish_unknown(pending)
        if self.stopped:
            return
        for client in self.clients:
            if client not in self._pending and sim.rng.random() < self.rate:
                self._invoke(sim, client)

    def on_applied(self, sim: Simulation, node_id: str, entry: Entry, reply: object) -> None:
        if isinstance(reply, tuple):
            request, result = reply
            for pending in list(self._pending.values()):
                if pending.request == request and pending.node == node_id:
                    self._finish(pending, result["status"])
        self._answer_reads(sim, node_id)

    def on_read_state(self, sim: Simulation, node_id: str, read: ReadState) -> None:
        for pending in list(self._pending.values()):
            if pending.request.encode() == read.context and pending.node == node_id:
                if read.index is None:
                    self._refused(pending)
                else:
                    pending.read_index = read.index
        self._answer_reads(sim, node_id)

    def on_crash(self, sim: Simulation, node_id: str) -> None:
        for pending in list(self._pending.values()):
            if pending.node == node_id:
                self._finish_unknown(pending)

    @property
    def in_flight(self) -> int:
        """How many operations still wait for their outcome."""
        return len(self._pending)

    def give_up_all(self) -> None:
        """Stop: whatever is still in flight has an unknown outcome."""
        self.stopped = True
        for pending in list(self._pending.values()):
            self._finish_unknown(pending)

    # -- internals -----------------------------------------------------------------------

    def _invoke(self, sim: Simulation, client: str) -> None:
        node = self._connections.get(client)
        if node is None or sim.rng.random() < 0.2:
            node = self._follow_leader_hint(sim, sim.rng.choice(list(sim.nodes)))
            self._connections[client] = node
        name = sim.rng.choice(self.names)
        self._requests += 1
        request = f"r{self._requests}"
        roll = sim.rng.random()
        if roll < 0.45:
            durable = sim.rng.random() < 0.5
            op_input: tuple[object, ...] = ("declare", ("durable", durable))
            command = {
                "op": "declare_queue",
                "vhost": VHOST,
                "name": name,
                "durable": durable,
                "home_node": node,
            }
        elif roll < 0.7:
            op_input = ("delete",)
            command = {"op": "delete_queue", "vhost": VHOST, "name": name}
        else:
            op_input = ("get",)
            command = {}
        pending = _Pending(client, request, node, name, op_input, self._tick(), sim.now)
        self._pending[client] = pending
        if op_input[0] == "get":
            if self.stale_reads:
                self._answer_locally(sim, pending)
            elif not sim.read_index(node, request.encode()):
                self._refused(pending)
            return
        data = canonical({"request": request, "command": command}).encode()
        if sim.propose(node, data) is None and client in self._pending:
            self._refused(pending)

    @staticmethod
    def _follow_leader_hint(sim: Simulation, node_id: str) -> str:
        """Where a client ends up after one redirect to the leader the first node names."""
        raft = sim.nodes[node_id].raft
        if raft is not None and raft.leader_id is not None:
            return raft.leader_id
        return node_id

    def _answer_reads(self, sim: Simulation, node_id: str) -> None:
        node = sim.nodes[node_id]
        for pending in list(self._pending.values()):
            if (
                pending.node == node_id
                and pending.read_index is not None
                and node.applied_index >= pending.read_index
            ):
                self._answer_locally(sim, pending)

    def _answer_locally(self, sim: Simulation, pending: _Pending) -> None:
        node = sim.nodes[pending.node]
        if not node.up or not isinstance(node.machine, MetadataMachine):
            self._refused(pending)
            return
        self._finish(pending, queue_properties(node.machine.state.queue(VHOST, pending.key)))

    def _finish(self, pending: _Pending, output: object) -> None:
        del self._pending[pending.client]
        self.history.append(
            Operation(
                pending.client,
                pending.key,
                pending.input,
                pending.invoked_at,
                self._tick(),
                output,
            )
        )

    def _refused(self, pending: _Pending) -> None:
        """The node turned the operation down: it had no effect and tells nothing."""
        del self._pending[pending.client]
        self._connections.pop(pending.client, None)

    def _finish_unknown(self, pending: _Pending) -> None:
        del self._pending[pending.client]
        self._connections.pop(pending.client, None)
        self.history.append(
            Operation(pending.client, pending.key, pending.input, pending.invoked_at)
        )

    def _tick(self) -> float:
        self._clock += 1
        return float(self._clock)


def metadata_simulation(seed: int, clients: QueueClients) -> Simulation:
    """A 3- or 5-node cluster replicating the metadata store, with faults on."""
    members = 5 if seed % 3 == 0 else 3
    return Simulation(
        seed,
        members=members,
        # Without check-quorum a deposed leader keeps believing it leads for much longer,
        # which is exactly when reads it answers alone would be stale.
        config=RaftConfig(election_tick=10, heartbeat_tick=2, check_quorum=seed % 2 == 0),
        faults=Faults(
            drop=0.05,
            duplicate=0.03,
            max_delay=3,
            partition=0.02,
            # Long partitions: a deposed leader then lingers while the majority moves on.
            heal=0.02,
            crash=0.01,
            crash_leader=0.01,
            isolate_leader=0.03,
            restart=0.1,
            crash_mid_ready=0.002,
            skip_tick=0.05,
        ),
        activity=Activity(propose=0.0, compact_after=20, compact=0.1, transfer=0.01),
        workload=clients,
        new_machine=MetadataMachine,
        restore_machine=MetadataMachine.restore,
    )


def run_clients(seed: int, ticks: int = 300, stale_reads: bool = False) -> QueueClients:
    """Run clients under faults, then heal and let in-flight operations finish."""
    clients = QueueClients(stale_reads=stale_reads)
    sim = metadata_simulation(seed, clients)
    sim.run(ticks)
    sim.heal()
    clients.stopped = True
    sim.wait_until(lambda: clients.in_flight == 0, clients.timeout_ticks + 5)
    clients.give_up_all()
    return clients
