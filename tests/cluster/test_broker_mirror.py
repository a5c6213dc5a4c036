"""The mirror keeps a node's model equal to the replicated metadata, and repairs it when it cannot.

The store here is the metadata machine itself, applied in-process (the Raft log in front of it
changes nothing of what the mirror sees: committed commands and their effects).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from cluster.metadata import MetadataState
from leveret import declare_rules as rules
from leveret.broker import Broker
from leveret.clustering.broker_mirror import BrokerMirror
from leveret.config import Config
from leveret.metadata_commands import declare_queue
from leveret.vhost import VirtualHost
from proto.metadata_schema import AddVhost, Command

NODE = "n1@localhost"


class InProcessStore:
    """The replicated store's machine without Raft: a command is committed as it is submitted."""

    node_name = NODE

    def __init__(self) -> None:
        self.state = MetadataState()
        self.mirror: BrokerMirror | None = None
        self.eventually: list[Command] = []

    def commit(self, command: Command) -> dict[str, Any]:
        reply, effects = self.state.apply(command)
        assert self.mirror is not None
        self.mirror.apply(effects)
        return reply

    async def submit(self, command: Command) -> dict[str, Any]:
        return self.commit(command)

    # One node: its model is always current.
    may_lag = False

    async def catch_up(self) -> None:
        return None

    def submit_eventually(self, command: Command) -> None:
        self.eventually.append(command)


@pytest.fixture
def mirrored() -> Iterator[tuple[Broker, InProcessStore, BrokerMirror]]:
    store = InProcessStore()
    broker = Broker(Config(node_name=NODE))
    broker.use_metadata(store)
    mirror = BrokerMirror(broker, store, lambda: store.state)
    store.mirror = mirror
    store.commit(AddVhost(name="/"))
    yield broker, store, mirror


def _declare(store: InProcessStore, name: str, home: str = NODE) -> None:
    reply = store.commit(declare_queue("/", name, rules.QueueDecl(durable=True), None, home))
    assert reply["status"] == "created"


def test_committed_queues_appear_at_home_and_elsewhere_as_remote(
    mirrored: tuple[Broker, InProcessStore, BrokerMirror],
) -> None:
    broker, store, mirror = mirrored
    _declare(store, "here")
    _declare(store, "there", home="n2@localhost")
    vhost = broker.vhosts["/"]
    assert "here" in vhost.queues and "there" in vhost.remote_queues
    assert mirror.repairs == 0


def test_an_effect_that_cannot_be_applied_rebuilds_the_model_from_the_store(
    mirrored: tuple[Broker, InProcessStore, BrokerMirror],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    broker, store, mirror = mirrored
    real_sync = BrokerMirror._sync_queue
    failures = iter([True])

    def sync_failing_once(self: BrokerMirror, vhost: VirtualHost, name: str) -> None:
        if next(failures, False):
            raise RuntimeError("a model that no longer matches")
        real_sync(self, vhost, name)

    monkeypatch.setattr(BrokerMirror, "_sync_queue", sync_failing_once)
    _declare(store, "after-divergence")
    assert "after-divergence" in broker.vhosts["/"].queues  # the rebuild put it there
    assert mirror.repairs == 1
    assert "diverged from the replicated metadata" in caplog.text
