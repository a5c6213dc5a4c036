"""The node loop around a one-node Raft group: apply, snapshot and compaction, recovery."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from cluster.errors import ProposalLost
from cluster.metadata_machine import MetadataMachine
from cluster.node_loop import LoopSettings, RaftLoop
from cluster.raft import FileStorage, RaftConfig, RaftNode

SETTINGS = LoopSettings(tick_seconds=0.01, snapshot_every=25)


def start_loop(directory: Path) -> tuple[RaftLoop, MetadataMachine]:
    storage = FileStorage(directory)
    stored = storage.load()
    machine = MetadataMachine()
    applied = 0
    if stored.snapshot is not None:
        machine.restore(stored.snapshot)
        applied = stored.snapshot.index
    blank = stored.snapshot is None and not stored.entries
    raft = RaftNode("solo", ["solo"] if blank else [], stored, RaftConfig())
    loop = RaftLoop(raft, storage, machine, lambda messages: None, SETTINGS, applied)
    loop.start()
    loop.campaign()
    return loop, machine


async def wait_leader(loop: RaftLoop) -> None:
    async with asyncio.timeout(5):
        while loop.raft.leader_id != "solo":
            await loop.wait_changed()


def test_proposals_are_applied_snapshotted_and_recovered(tmp_path: Path) -> None:
    async def first_life() -> list[Any]:
        loop, _ = start_loop(tmp_path)
        await wait_leader(loop)
        await loop.propose(json.dumps({"op": "add_vhost", "name": "/"}).encode())
        replies = []
        for number in range(60):
            command = {"op": "set_global_parameter", "name": f"p{number}", "value": number}
            replies.append(await loop.propose(json.dumps(command).encode()))
        assert loop.raft.first_index > 25, "the log was compacted into a snapshot"
        await loop.stop()
        return replies

    replies = asyncio.run(first_life())
    assert all(reply["status"] in ("created", "ok", "updated") for reply in replies), replies
    assert (tmp_path / "raft.snapshot").exists()

    async def second_life() -> list[Any]:
        loop, machine = start_loop(tmp_path)
        await wait_leader(loop)
        await loop.wait_applied(loop.raft.commit_index)
        names = [record.name for record in machine.state.vhosts()]
        parameters = machine.state.global_parameter("p59")
        await loop.stop()
        return [names, parameters]

    names, parameter = asyncio.run(second_life())
    assert names == ["/"]
    assert parameter is not None and parameter.value == 59


def test_a_read_index_is_confirmed_and_waits_for_apply(tmp_path: Path) -> None:
    async def scenario() -> int:
        loop, _ = start_loop(tmp_path)
        await wait_leader(loop)
        await loop.propose(json.dumps({"op": "add_vhost", "name": "v"}).encode())
        index = await loop.read_index()
        await asyncio.wait_for(loop.wait_applied(index), 5)
        applied = loop.applied_index
        await loop.stop()
        return applied - index

    assert asyncio.run(scenario()) >= 0


def test_a_forwarded_proposal_learns_its_position_and_its_reply_from_apply(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        loop, _ = start_loop(tmp_path)
        await wait_leader(loop)
        positions: list[tuple[int, int, BaseException | None]] = []
        command = json.dumps({"op": "add_vhost", "name": "v"}).encode()
        loop.propose_forwarded(command, lambda *position: positions.append(position))
        async with asyncio.timeout(5):
            while not positions:
                await asyncio.sleep(0.005)
        index, term, refusal = positions[0]
        assert refusal is None and index > 0 and term == loop.raft.term
        reply = await loop.expect(index, term)
        assert reply["status"] == "created"
        # Asked again once applied: the reply was kept; an entry of another term is not ours.
        assert (await loop.expect(index, term))["status"] == "created"
        with pytest.raises(ProposalLost):
            await loop.expect(index, term + 1)
        await loop.stop()

    asyncio.run(scenario())


def test_an_idle_node_sleeps_through_the_ticks_that_only_count(tmp_path: Path) -> None:
    """The Raft clock keeps its pace, but an idle node wakes for none of its ticks: those it
    slept through are applied together when it wakes."""

    async def scenario() -> list[float]:
        loop, _ = start_loop(tmp_path)
        await wait_leader(loop)
        raft, clock = loop.raft, asyncio.get_running_loop()
        tick = raft.tick
        times: list[float] = []

        def timed_tick() -> Any:
            times.append(clock.time())
            return tick()

        raft.tick = timed_tick  # type: ignore[method-assign]
        await asyncio.sleep(50 * SETTINGS.tick_seconds)
        # A proposal still goes through at once.
        await asyncio.wait_for(
            loop.propose(json.dumps({"op": "add_vhost", "name": "/"}).encode()), 5
        )
        await loop.stop()
        return times

    times = asyncio.run(scenario())
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    wakes = 1 + sum(1 for gap in gaps if gap > SETTINGS.tick_seconds / 2)
    assert len(times) >= 40, len(times)
    assert wakes <= 12, (wakes, len(times))
