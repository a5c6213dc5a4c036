"""Pages of the queue listing on Leveret and on RabbitMQ 3.10.8, for the same queues: the same
items and the same filtered_count, total_count, item_count and page_count."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import quote

import pytest

from tests.limits.conftest import Broker
from tests.support.node import InProcessNode
from tests.support.rabbitmq import require_rabbitmq, start_rabbitmq

pytestmark = pytest.mark.rabbitmq

QUEUES = {"/": ("q1", "q2", "alpha", "Q3", "beta-q"), "pages": ("b", "q9", "zeta", "Alpha2")}


def declare(broker: Broker) -> Broker:
    assert broker.http("PUT", "/api/vhosts/pages")[0] in (201, 204)
    permissions = {"configure": ".*", "write": ".*", "read": ".*"}
    assert broker.http("PUT", "/api/permissions/pages/guest", permissions)[0] in (201, 204)
    for vhost, names in QUEUES.items():
        for name in names:
            status, _ = broker.http("PUT", f"/api/queues/{quote(vhost, safe='')}/{name}", {})
            assert status in (201, 204)
    return broker


@pytest.fixture(scope="module")
def rabbitmq_broker() -> Iterator[Broker]:
    require_rabbitmq()
    with start_rabbitmq(management=True) as node:
        assert node.mgmt_port is not None
        yield declare(Broker("rabbitmq", node.amqp_port, node.mgmt_port))


@pytest.fixture(scope="module")
def leveret_broker() -> Iterator[Broker]:
    node = InProcessNode()
    try:
        yield declare(Broker("leveret", node.port, node.node.ports["mgmt"]))
    finally:
        node.stop()


QUERIES = [
    f"sort={sort}&sort_reverse={reverse}&name={name}&use_regex={regex}&page={page}&page_size={size}"
    for sort in ("", "name", "vhost")
    for reverse in ("false", "true")
    for name, regex in (("", "false"), ("q", "false"), ("%5Eq%5B0-9%5D", "true"))
    for size, page in ((2, 1), (2, 2), (3, 2), (100, 1))
]


def answer(broker: Broker, query: str) -> tuple[int, object]:
    status, body = broker.http("GET", f"/api/queues?{query}&columns=name,vhost")
    if status == 200 and isinstance(body, dict):
        shown = {key: body[key] for key in sorted(body)}
        # RabbitMQ leaves unsorted items, and ties, in its tables' own order.
        if query.startswith("sort=&"):
            shown["items"] = len(shown["items"])
        elif query.startswith("sort=vhost&"):
            shown["items"] = [item["vhost"] for item in shown["items"]]
        return status, shown
    return status, body


def test_pages_match_rabbitmq(rabbitmq_broker: Broker, leveret_broker: Broker) -> None:
    different = [
        (query, answer(leveret_broker, query), answer(rabbitmq_broker, query))
        for query in QUERIES
        if answer(leveret_broker, query) != answer(rabbitmq_broker, query)
    ]
    assert not different, different[:3]
