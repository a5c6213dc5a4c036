"""The disk alarm: below disk_free_limit publishers are blocked with connection.blocked."""

from __future__ import annotations

import struct

from leveret.amqp import methods as m
from leveret.amqp.frames import method_frame
from tests.support.node import InProcessNode, wait_for
from tests.support.raw_client import RawClient


def test_low_disk_blocks_publishers() -> None:
    node = InProcessNode(disk_free_limit=str(10**18))  # more than any disk has: always alarmed
    try:
        wait_for(lambda: node.call(lambda: "disk" in node.broker.alarms))
        client = RawClient(node.port)
        client.handshake(capabilities={"connection.blocked": True})
        # As RabbitMQ, a connection hears it is blocked when it publishes.
        client.send(
            method_frame(1, m.BasicPublish(routing_key="q"))
            + struct.pack(">BHI", 2, 1, 14)
            + struct.pack(">HHQH", 60, 0, 0, 0)
            + b"\xce"
        )
        channel, method = client.read_method()  # type: ignore[misc]
        assert channel == 0 and isinstance(method, m.ConnectionBlocked)
        assert method.reason == "low on disk"
        client.close()
    finally:
        node.stop()
