"""The two 3-node clusters of the cross-node side-by-side tests, started once for all their
scenarios."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.cluster.processes import running_cluster
from tests.interop.three_nodes import LeveretThree, RabbitThree
from tests.support.rabbitmq import find_rabbitmq
from tests.support.rabbitmq_cluster import start_rabbitmq_cluster


@pytest.fixture(scope="package")
def rabbitmq_three() -> Iterator[RabbitThree]:
    if find_rabbitmq() is None:
        pytest.fail("Debian's rabbitmq-server is needed for the cluster comparison")
    cluster = start_rabbitmq_cluster(3)
    try:
        yield RabbitThree(cluster)
    finally:
        cluster.stop()


@pytest.fixture(scope="package")
def leveret_three() -> Iterator[LeveretThree]:
    with running_cluster(3) as cluster:
        yield LeveretThree(cluster)
