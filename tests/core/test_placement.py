"""Where new queues go: client-local, and balanced as RabbitMQ counts (random above 1000)."""

from __future__ import annotations

import random

import pytest

from leveret.config import Config, ConfigError
from leveret.placement import BALANCED_COUNT_LIMIT, home_node

NODES = ["a@h", "b@h", "c@h"]


def test_client_local_keeps_the_queue_on_the_clients_node() -> None:
    assert home_node("client-local", "b@h", NODES, ["b@h"] * 5, 5) == "b@h"


def test_balanced_picks_the_node_with_fewest_queues_the_clients_own_among_equals() -> None:
    homes = ["a@h", "a@h", "b@h", "c@h"]
    assert home_node("balanced", "a@h", NODES, homes, len(homes)) == "b@h"
    assert home_node("balanced", "c@h", NODES, homes, len(homes)) == "c@h"
    assert home_node("least-leaders", "a@h", NODES, homes, len(homes)) == "b@h"


def test_balanced_only_places_on_running_nodes_and_alone_stays_local() -> None:
    assert home_node("balanced", "a@h", ["a@h", "c@h"], ["a@h"], 1) == "c@h"
    assert home_node("balanced", "a@h", ["a@h"], [], 0) == "a@h"


def test_balanced_picks_any_node_above_rabbitmqs_count_limit() -> None:
    homes = ["a@h"] * BALANCED_COUNT_LIMIT
    chosen = {
        home_node("balanced", "a@h", NODES, homes, len(homes), random.Random(seed))
        for seed in range(30)
    }
    assert chosen == set(NODES)


def test_the_default_locator_is_configurable_and_checked() -> None:
    assert Config.load(None, {}).queue_leader_locator == "client-local"
    assert Config.load(None, {"queue_leader_locator": "balanced"}).queue_leader_locator == (
        "balanced"
    )
    with pytest.raises(ConfigError, match="queue_leader_locator"):
        Config.load(None, {"queue_leader_locator": "random"})
