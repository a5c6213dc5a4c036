"""Fixtures for the fault tests: a lab of network namespaces, and a cluster in it."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.faults.netlab import NetLab, missing_tools
from tests.faults.nodes import LabCluster


def require_namespaces() -> None:
    """Skip where namespaces cannot be made, except in CI, where that is a failure."""
    lacking = missing_tools()
    if lacking:
        reason = f"network namespaces need {', '.join(lacking)}"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)


@pytest.fixture
def lab() -> Iterator[NetLab]:
    require_namespaces()
    built = NetLab(3).build()
    try:
        yield built
    finally:
        built.teardown()


@pytest.fixture
def lab_cluster(lab: NetLab) -> Iterator[LabCluster]:
    cluster = LabCluster(lab)
    try:
        cluster.form()
        yield cluster
    except BaseException:
        print(cluster.logs())
        raise
    finally:
        cluster.cleanup()
