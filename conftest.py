"""The test process's own settings: gRPC's fork handlers off, and how xdist shares out the suite."""

from __future__ import annotations

import os

import pytest

# Tests use gRPC in-process, then fork nodes. With its fork support on, gRPC restarts its poller
# thread in the child, where subprocess has already closed the inherited descriptors (gRPC's
# epoll among them): the child aborts before exec ("epoll_wait error: Bad file descriptor"), a
# few times in every thousand forks. Set before gRPC's first import: pytest loads this file first.
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
