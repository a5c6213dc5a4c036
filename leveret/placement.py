"""Where a new queue lives: the declaring client's node, or the node with the fewest queues."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable

CLIENT_LOCAL = "client-local"
BALANCED = "balanced"
# Locators a node accepts in its configuration (arguments and policies also take RabbitMQ's
# older "random" and "least-leaders").
CONFIGURABLE_LOCATORS = (CLIENT_LOCAL, BALANCED)
# Above this many queues RabbitMQ's balanced placement stops counting and picks any node.
BALANCED_COUNT_LIMIT = 1000


def home_node(
    locator: str,
    local_node: str,
    running_nodes: list[str],
    homes: Iterable[str],
    queue_count: int,
    choose: random.Random | None = None,
) -> str:
    """The node a new queue goes to, under `locator`.

    `homes` names the home node of each existing queue (read only when counting), of which there
    are `queue_count`. Only running nodes are candidates; a single node keeps its queues."""
    if locator == CLIENT_LOCAL or len(running_nodes) <= 1 or locator not in _LOCATING:
        return local_node
    pick = choose or random
    if locator == "random" or (locator == BALANCED and queue_count >= BALANCED_COUNT_LIMIT):
        return pick.choice(running_nodes)
    counts = Counter(homes)
    # Fewest queues first; among equals the client's own node, then any by name.
    return min(running_nodes, key=lambda node: (counts[node], node != local_node, node))


_LOCATING = frozenset({BALANCED, "random", "least-leaders"})
