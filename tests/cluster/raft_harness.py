"""A hand-driven Raft cluster for transcript tests: nothing moves unless the test says so."""

from __future__ import annotations

import random
from collections.abc import Callable

from cluster.raft import Entry, Message, RaftConfig, RaftNode, Ready, Role, StorageState
from cluster.raft.memory_storage import MemoryStorage

TEST_CONFIG = RaftConfig(election_tick=10, heartbeat_tick=1)


class Cluster:
    """Nodes with in-memory storage; messages wait in `outbox` until delivered."""

    def __init__(
        self,
        members: list[str],
        config: RaftConfig = TEST_CONFIG,
        spares: tuple[str, ...] = (),
        seed: int = 1,
    ) -> None:
        self.config = config
        self.seed = seed
        self.members = members
        self.storage: dict[str, MemoryStorage] = {}
        self.nodes: dict[str, RaftNode] = {}
        self.applied: dict[str, list[Entry]] = {}
        self.readies: dict[str, list[Ready]] = {}
        self.outbox: list[Message] = []
        self.cut: set[str] = set()
        for node_id in [*members, *spares]:
            self.storage[node_id] = MemoryStorage()
            self.start(node_id, members if node_id in members else [])

    def start(self, node_id: str, peers: list[str], stored: StorageState | None = None) -> None:
        """(Re)start `node_id` from its storage (or from `stored`)."""
        state = stored if stored is not None else self.storage[node_id].load()
        rng = random.Random(f"{self.seed}/{node_id}")
        self.nodes[node_id] = RaftNode(node_id, peers, state, self.config, rng)
        self.applied[node_id] = []
        self.readies[node_id] = []
        self.handle(node_id, self.nodes[node_id].ready())

    def restart(self, node_id: str) -> None:
        """Crash `node_id` (its unsent messages are lost) and start it again from storage."""
        self.outbox = [m for m in self.outbox if m.src != node_id]
        self.start(node_id, [])

    def handle(self, node_id: str, ready: Ready) -> Ready:
        """Persist, queue the messages, apply; returns `ready` for inspection."""
        self.storage[node_id].persist(ready)
        self.outbox.extend(ready.messages)
        self.applied[node_id].extend(ready.committed)
        self.readies[node_id].append(ready)
        return ready

    def call(self, node_id: str, action: Callable[[RaftNode], Ready]) -> Ready:
        """Run `action` on a node and handle the Ready it returns."""
        return self.handle(node_id, action(self.nodes[node_id]))

    def deliver(
        self, max_messages: int = 10_000, keep: Callable[[Message], bool] | None = None
    ) -> int:
        """Deliver queued messages (and the ones they cause) until none are left.

        Messages to or from a node in `cut`, or that `keep` rejects, are dropped.
        """
        delivered = 0
        while self.outbox:
            if delivered >= max_messages:
                raise AssertionError("messages kept flowing; is the cluster livelocked?")
            message = self.outbox.pop(0)
            if message.src in self.cut or message.dst in self.cut:
                continue
            if keep is not None and not keep(message):
                continue
            delivered += 1
            self.handle(message.dst, self.nodes[message.dst].step(message))
        return delivered

    def tick(self, node_id: str, times: int = 1) -> None:
        for _ in range(times):
            self.handle(node_id, self.nodes[node_id].tick())

    def tick_all(self, times: int = 1) -> None:
        """Tick every node and deliver, `times` over."""
        for _ in range(times):
            for node_id in self.nodes:
                self.tick(node_id)
            self.deliver()

    def elect(self, node_id: str) -> RaftNode:
        """Make `node_id` campaign and deliver until the election is over."""
        self.call(node_id, lambda node: node.campaign())
        self.deliver()
        leader = self.nodes[node_id]
        assert leader.role is Role.LEADER, f"{node_id} did not win: {leader.status()}"
        return leader

    def propose(self, node_id: str, data: bytes) -> Ready:
        return self.call(node_id, lambda node: node.propose(data))

    def propose_many(self, node_id: str, commands: list[bytes]) -> Ready:
        return self.call(node_id, lambda node: node.propose_many(commands))

    def leaders(self) -> list[str]:
        return [node_id for node_id, node in self.nodes.items() if node.role is Role.LEADER]

    def log_terms(self, node_id: str) -> list[tuple[int, int]]:
        node = self.nodes[node_id]
        return [(e.index, e.term) for e in node.entries(node.first_index, node.last_index)]
