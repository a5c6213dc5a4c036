"""The node loop with RaftConfig.parallel_leader_persist: a leader's appends go out before its
own write is fsynced, and its proposals still commit (alone, or with a follower's ack)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path

from cluster.metadata_machine import MetadataMachine
from cluster.node_loop import LoopSettings, RaftLoop
from cluster.raft import (
    AppendEntries,
    AppendEntriesResponse,
    FileStorage,
    Message,
    RaftConfig,
    RaftNode,
    Ready,
    RequestVote,
    RequestVoteResponse,
)

SETTINGS = LoopSettings(tick_seconds=0.01, snapshot_every=25)
PARALLEL = RaftConfig(pre_vote=False, check_quorum=False, parallel_leader_persist=True)


class WatchedStorage(FileStorage):
    """Notes the last entry written and the last one covered by an fsync."""

    written = 0
    synced = 0

    def write(self, ready: Ready) -> None:
        super().write(ready)
        if ready.entries:
            self.written = ready.entries[-1].index

    def sync(self) -> None:
        super().sync()
        self.synced = self.written


def command(number: int) -> bytes:
    return json.dumps({"op": "set_global_parameter", "name": f"p{number}", "value": 1}).encode()


def test_a_lone_node_commits_and_recovers(tmp_path: Path) -> None:
    async def life(first: bool) -> int:
        storage = FileStorage(tmp_path)
        stored = storage.load()
        machine = MetadataMachine()
        applied = 0
        if stored.snapshot is not None:
            machine.restore(stored.snapshot)
            applied = stored.snapshot.index
        raft = RaftNode("solo", ["solo"] if first else [], stored, PARALLEL)
        loop = RaftLoop(raft, storage, machine, lambda messages: None, SETTINGS, applied)
        loop.start()
        loop.campaign()
        async with asyncio.timeout(5):
            while loop.raft.leader_id != "solo":
                await loop.wait_changed()
            if first:
                for number in range(60):
                    await loop.propose(command(number))
            else:
                await loop.propose(command(99))
        applied = loop.applied_index
        await loop.stop()
        return applied

    first = asyncio.run(life(True))
    assert first >= 61  # the bootstrap, the no-op and sixty commands
    assert asyncio.run(life(False)) > first


def test_a_leader_sends_its_appends_before_its_fsync(tmp_path: Path) -> None:
    async def scenario() -> None:
        storage = WatchedStorage(tmp_path)
        sent: list[tuple[Message, int]] = []

        def send(messages: Sequence[Message]) -> None:
            sent.extend((message, storage.synced) for message in messages)

        raft = RaftNode("a", ["a", "b", "c"], storage.load(), PARALLEL)
        loop = RaftLoop(raft, storage, MetadataMachine(), send, SETTINGS)
        loop.start()
        loop.campaign()
        async with asyncio.timeout(5):
            while not any(isinstance(m, RequestVote) for m, _ in sent):
                await asyncio.sleep(0.001)
            loop.deliver([RequestVoteResponse("b", "a", raft.term, True)])
            while loop.raft.leader_id != "a":
                await loop.wait_changed()
            noop = raft.last_index
            loop.deliver([AppendEntriesResponse("b", "a", raft.term, True, noop)])
            while raft.commit_index < noop:
                await asyncio.sleep(0.001)
            future = loop.propose(command(1))
            while raft.last_index == noop:
                await asyncio.sleep(0.001)
            index = raft.last_index
            loop.deliver([AppendEntriesResponse("b", "a", raft.term, True, index)])
            await future
        early = [
            synced
            for message, synced in sent
            if isinstance(message, AppendEntries)
            and message.entries
            and message.entries[-1].index == index
        ]
        assert early and all(synced < index for synced in early)
        await loop.stop()

    asyncio.run(scenario())
