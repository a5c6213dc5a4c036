"""The test process's own settings: gRPC's fork handlers off, and how xdist shares out the suite."""

from __future__ import annotations

import os

import pytest

# Tests use gRPC in-process and then fork nodes. With fork support on, gRPC restarts its poller
# in the child, which meets the descriptor subprocess closed before exec; the child aborts
# ("epoll_wait error: Bad file descriptor") in a few forks of every thousand. It must be set before
# gRPC is first imported, which is why it is here: pytest loads this file first.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")

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
