"""ClusterService instances on one event loop, talking gRPC over loopback: the node's API."""

from __future__ import annotations

import asyncio
import logging
import shutil
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from cluster.errors import ClusterUnavailable, NoQuorum
from cluster.gossip import SwimConfig
from cluster.gossip.report import NodeReport
from cluster.node_loop import LoopSettings
from cluster.raft import Role
from cluster.remote import PeerUnreachable, Remote
from cluster.secret import CallSigner
from cluster.service import ClusterService
from cluster.settings import ClusterSettings
from cluster.transport import PeerChannels, TlsFiles
from proto.metadata_schema import AddVhost, DeclareQueue

SECRET = b"in-process test secret"
FAST_LOOP = LoopSettings(tick_seconds=0.05)
FAST_GOSSIP = SwimConfig(protocol_period=0.2, ping_timeout=0.2, suspicion_timeout=1.0)


def make(
    tmp: Path,
    name: str,
    join: tuple[str, ...] = (),
    secret: bytes = SECRET,
    tls: TlsFiles | None = None,
    loop: LoopSettings = FAST_LOOP,
    gossip: SwimConfig = FAST_GOSSIP,
    report_source: Callable[[], NodeReport] | None = None,
) -> ClusterService:
    settings = ClusterSettings(
        node_name=name,
        data_dir=tmp / name,
        bind="127.0.0.1",
        port=0,
        secret=secret,
        join=join,
        loop=loop,
        gossip=gossip,
        submit_timeout=2.0,
        tls=tls,
    )
    return ClusterService(settings, report_source)


async def wait_until(condition: Callable[[], Any], timeout: float = 10.0) -> Any:
    async with asyncio.timeout(timeout):
        while not (value := condition()):
            await asyncio.sleep(0.02)
        return value


async def three(tmp: Path) -> list[ClusterService]:
    first = make(tmp, "a")
    await first.start()
    await wait_until(lambda: first.status().leader == "a")
    others = [make(tmp, name, join=(first.address,)) for name in ("b", "c")]
    for node in others:
        await node.start()
    nodes = [first, *others]
    await wait_until(lambda: all(len(node.status().voters) == 3 for node in nodes))
    return nodes


def run(tmp: Path, scenario: Callable[[list[ClusterService]], Awaitable[None]]) -> None:
    async def main() -> None:
        nodes = await three(tmp)
        try:
            await scenario(nodes)
        finally:
            for node in nodes:
                await node.stop()

    asyncio.run(main())


def leader_of(nodes: list[ClusterService]) -> ClusterService:
    return next(node for node in nodes if node.status().role == Role.LEADER.value)


def test_a_command_submitted_anywhere_is_read_everywhere(tmp_path: Path) -> None:
    async def scenario(nodes: list[ClusterService]) -> None:
        follower = next(node for node in nodes if node.status().role != "leader")
        reply = await follower.submit(AddVhost(name="v"))
        assert reply["status"] == "created"
        again = await nodes[2].submit(AddVhost(name="v"))
        assert again["status"] == "exists"
        for node in nodes:
            await node.read_barrier()
            assert node.metadata.vhost("v") is not None
        refused = await follower.submit(
            DeclareQueue(vhost="missing", name="q", exclusive_owner=None, home_node="n")
        )
        assert (refused["status"], refused["reason"]) == ("error", "no such vhost 'missing'")
        statuses = [node.status() for node in nodes]
        assert len({status.leader for status in statuses}) == 1
        assert all(sorted(status.members) == ["a", "b", "c"] for status in statuses)

    run(tmp_path, scenario)


def test_without_a_majority_a_change_fails_with_no_quorum(tmp_path: Path) -> None:
    async def scenario(nodes: list[ClusterService]) -> None:
        survivor = nodes[0]
        for node in nodes[1:]:
            await node.stop()
        await wait_until(lambda: survivor.status().role != "leader", 5)
        with pytest.raises(NoQuorum) as refused:
            await survivor.submit(AddVhost(name="lonely"), timeout=1.0)
        text = str(refused.value)
        assert "no quorum" in text and "reaches 1 of 3 members" in text and "2 are needed" in text
        with pytest.raises(NoQuorum):
            await survivor.read_barrier(timeout=0.5)
        assert survivor.metadata.vhost("lonely") is None
        nodes[1:] = []  # already stopped

    run(tmp_path, scenario)


def test_a_stopping_leader_hands_leadership_over(tmp_path: Path) -> None:
    async def scenario(nodes: list[ClusterService]) -> None:
        await wait_until(lambda: all(len(node.status().gossip) == 3 for node in nodes))
        leader = leader_of(nodes)
        term = leader.status().term
        others = [node for node in nodes if node is not leader]
        await leader.stop()
        nodes.remove(leader)
        # A transfer elects the target at once: one term later, well before an election timeout.
        new = await wait_until(
            lambda: next((n for n in others if n.status().role == "leader"), None), 1.0
        )
        assert new.status().term == term + 1
        assert (await new.submit(AddVhost(name="after")))["status"] == "created"

    run(tmp_path, scenario)


def test_a_forgotten_node_is_out_and_cannot_disturb(tmp_path: Path) -> None:
    async def scenario(nodes: list[ClusterService]) -> None:
        leader = leader_of(nodes)
        gone = next(node for node in nodes if node is not leader)
        await nodes[0].forget_node(gone.name)
        rest = [node for node in nodes if node is not gone]
        await wait_until(lambda: all(gone.name not in node.status().voters for node in rest))
        await wait_until(lambda: all(gone.name not in node.status().members for node in rest))
        with pytest.raises(ClusterUnavailable):
            await gone.submit(AddVhost(name="outside"), timeout=1.0)
        assert (await rest[0].submit(AddVhost(name="inside")))["status"] == "created"
        with pytest.raises(ClusterUnavailable, match="not in the cluster"):
            await rest[1].forget_node(gone.name)
        term = leader.status().term
        # The forgotten node campaigns, in vain: the others refuse its Raft traffic.
        await wait_until(lambda: gone.status().role == "pre_candidate", 5)
        assert leader.status().term == term and leader.status().role == "leader"

    run(tmp_path, scenario)


def test_a_node_with_the_wrong_secret_never_joins(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def main() -> None:
        seed = make(tmp_path, "a")
        await seed.start()
        intruder = make(tmp_path, "x", join=(seed.address,), secret=b"another secret")
        await intruder.start()
        try:
            with caplog.at_level(logging.WARNING):
                await wait_until(
                    lambda: "rejected an unauthenticated cluster call" in caplog.text, 5
                )
            assert seed.status().voters == ("a",)
            assert "x" not in seed.status().members
        finally:
            await intruder.stop()
            await seed.stop()

    asyncio.run(main())


def make_certificates(directory: Path) -> TlsFiles:
    """A CA and one certificate for 127.0.0.1 signed by it (every test node uses the same)."""

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
            "-days", "2", "-subj", "/CN=leveret test CA")  # fmt: skip
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "node.key", "-out", "node.csr",
            "-subj", "/CN=localhost")  # fmt: skip
    (directory / "san.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    openssl("x509", "-req", "-in", "node.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "node.pem", "-days", "2", "-extfile", "san.cnf")  # fmt: skip
    return TlsFiles(directory / "node.pem", directory / "node.key", directory / "ca.pem")


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_nodes_can_talk_over_mutual_tls(tmp_path: Path) -> None:
    tls = make_certificates(tmp_path)

    async def scenario() -> None:
        seed = make(tmp_path, "a", tls=tls)
        await seed.start()
        joiner = make(tmp_path, "b", join=(seed.address,), tls=tls)
        await joiner.start()
        try:
            await wait_until(lambda: len(joiner.status().voters) == 2)
            assert (await joiner.submit(AddVhost(name="tls")))["status"] == "created"
            plain = PeerChannels(CallSigner(SECRET, "plain-tool", ""))
            with pytest.raises(PeerUnreachable):
                await Remote(plain).read_index(seed.address, 1.0)
            await plain.close()
        finally:
            await joiner.stop()
            await seed.stop()

    asyncio.run(scenario())


def test_a_new_node_catches_up_from_a_snapshot(tmp_path: Path) -> None:
    compacting = LoopSettings(tick_seconds=0.05, snapshot_every=20)

    async def main() -> None:
        seed = make(tmp_path, "a", loop=compacting)
        await seed.start()
        await wait_until(lambda: seed.status().leader == "a")
        await seed.submit(AddVhost(name="v"))
        for number in range(60):
            command = DeclareQueue(
                vhost="v", name=f"q{number}", exclusive_owner=None, home_node="a"
            )
            await seed.submit(command)
        assert (tmp_path / "a" / "cluster" / "raft" / "raft.snapshot").exists(), "compacted"
        late = make(tmp_path, "b", join=(seed.address,), loop=compacting)
        await late.start()
        try:
            await late.read_barrier()
            assert len(late.metadata.queues("v")) == 60
            assert (tmp_path / "b" / "cluster" / "raft" / "raft.snapshot").exists()
        finally:
            await late.stop()
            await seed.stop()

    asyncio.run(main())


def test_a_follower_forwards_commands_on_its_raft_stream(tmp_path: Path) -> None:
    # Concurrent commands from a follower go to the leader on its Raft stream, not one Submit
    # call each, and each caller gets the reply its own command had, as applied on its node.
    async def scenario(nodes: list[ClusterService]) -> None:
        leader = leader_of(nodes)
        follower = next(node for node in nodes if node is not leader)
        await follower.submit(AddVhost(name="warm-up"))
        before = follower.forwarding_statistics()
        names = [f"v{number}" for number in range(40)] + ["v0", "v1"]
        replies = await asyncio.gather(*(follower.submit(AddVhost(name=n)) for n in names))
        statuses = [reply["status"] for reply in replies]
        assert sorted(statuses[:40] + statuses[40:]).count("created") == 40
        assert statuses.count("exists") == 2
        assert all(follower.metadata.vhost(name) is not None for name in names)
        after = follower.forwarding_statistics()
        assert after.forwarded - before.forwarded == len(names)
        assert after.sent_back == before.sent_back
        # The leader forwards nothing: it proposes its own commands.
        assert leader.forwarding_statistics().forwarded == 0
        for node in nodes:
            await node.read_barrier()
            assert all(node.metadata.vhost(name) is not None for name in names)
        # Read barriers go on the stream too; concurrent ones each see what was committed
        # before they began.
        other = next(node for node in nodes if node not in (leader, follower))
        before = follower.forwarding_statistics()
        await other.submit(AddVhost(name="made-elsewhere"))
        await asyncio.gather(*(follower.read_barrier() for _ in range(5)))
        assert follower.metadata.vhost("made-elsewhere") is not None
        after = follower.forwarding_statistics()
        assert (after.forwarded - before.forwarded, after.sent_back) == (5, before.sent_back)

    run(tmp_path, scenario)


def test_an_alarm_and_its_end_reach_every_node_at_once_not_with_the_probes(
    tmp_path: Path,
) -> None:
    """Probes a minute apart would bring a's alarm to b and c a minute late: a change of a
    node's alarms goes to every member when it happens."""
    slow = SwimConfig(protocol_period=60.0, ping_timeout=0.5, suspicion_timeout=120.0)
    alarms: list[str] = []
    heard: dict[str, frozenset[str]] = {}

    async def main() -> None:
        first = make(
            tmp_path, "a", gossip=slow, report_source=lambda: NodeReport(alarms=tuple(alarms))
        )
        await first.start()
        await wait_until(lambda: first.status().leader == "a")
        others = [make(tmp_path, name, join=(first.address,), gossip=slow) for name in "bc"]
        nodes = [first, *others]
        for node in others:
            node.peer_alarms_changed = lambda found, name=node.name: heard.__setitem__(name, found)
            await node.start()
        try:
            await wait_until(lambda: all(len(node.status().voters) == 3 for node in nodes))
            alarms.append("memory")
            first.announce_report()
            await wait_until(lambda: heard == {"b": {"memory"}, "c": {"memory"}}, timeout=5.0)
            alarms.clear()
            first.announce_report()
            await wait_until(lambda: heard == {"b": set(), "c": set()}, timeout=5.0)
        finally:
            for node in nodes:
                await node.stop()

    asyncio.run(main())
