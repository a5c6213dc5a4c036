"""How pytest-xdist shares the suite out: a module to one worker, the host's networking to one."""

from __future__ import annotations

import pytest

# Docker's engine saves and restores the host's iptables rules around its run, and the fault
# harness adds namespaces, bridges and rules of its own: tests that touch the host's networking
# run one after another, on one worker.
_HOST_NETWORKING = ("tests/containers/", "tests/faults/")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        group = "host-networking" if path.startswith(_HOST_NETWORKING) else path
        # A module stays on one worker, so its module- and session-scoped fixtures start once.
        item.add_marker(pytest.mark.xdist_group(group))
