"""Containers publish their ports on host ports the tests chose, below the ephemeral range.

Docker picks a published port from the kernel's ephemeral range, where any client socket of a
test running meanwhile may hold it: the container's start then fails with "address already in
use". Ports below that range are taken only by servers that chose them (tests.support.ports).
"""

from __future__ import annotations

from leveret.testing import LeveretContainer
from leveret.testing.container import AMQP_PORT, MANAGEMENT_PORT
from tests.support.ports import restartable_ports


def leveret_container(image: str) -> LeveretContainer:
    """A LeveretContainer whose AMQP and management ports are published on chosen host ports."""
    amqp, management = restartable_ports(2)
    container = LeveretContainer(image)
    container.with_bind_ports(AMQP_PORT, amqp)
    container.with_bind_ports(MANAGEMENT_PORT, management)
    return container
