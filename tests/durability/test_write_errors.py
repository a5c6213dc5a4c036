"""Disk write errors: the affected publishes are nacked, nothing stored before is lost, and the
node carries on once the disk recovers."""

from __future__ import annotations

import errno

import pika
import pika.exceptions
import pytest

from tests.store.faults import FaultyFileSystem
from tests.support.node import InProcessNode

PERSISTENT = pika.BasicProperties(delivery_mode=2)


@pytest.mark.parametrize("failure", ["fsync-eio", "write-enospc"])
def test_failed_disk_writes_are_nacked_and_the_node_survives(failure: str) -> None:
    node = InProcessNode()
    faulty = FaultyFileSystem()
    node.call(lambda: setattr(node.node.stores, "fs", faulty))
    try:
        conn = pika.BlockingConnection(pika.URLParameters(node.url))
        ch = conn.channel()
        ch.confirm_delivery()
        ch.queue_declare("fragile", durable=True)
        ch.basic_publish("", "fragile", b"before", PERSISTENT)
        if failure == "fsync-eio":
            faulty.sync_error = errno.EIO
        else:
            faulty.write_budget = 0
        with pytest.raises(pika.exceptions.NackError):
            ch.basic_publish("", "fragile", b"during", PERSISTENT)
        faulty.sync_error = None
        faulty.write_budget = None
        ch.basic_publish("", "fragile", b"after", PERSISTENT)  # acked again
        bodies = []
        while True:
            method, _, body = ch.basic_get("fragile", auto_ack=True)
            if method is None:
                break
            bodies.append(body)
        # The nacked message may or may not have been kept; the confirmed ones are all there.
        assert bodies[0] == b"before" and bodies[-1] == b"after"
        conn.close()
    finally:
        node.stop()
