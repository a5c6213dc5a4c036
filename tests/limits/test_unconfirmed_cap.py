"""The per-connection cap on unconfirmed publishes: a confirm publisher that runs far ahead of
its confirms is read no further until half of them have come, so what it has in flight in the
node stays bounded."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from leveret.amqp import methods as m
from leveret.amqp.frames import content_frames, method_frame
from leveret.amqp.properties import BasicProperties, encode_header_payload
from leveret.server.protocol import FRAMES_PER_TURN
from leveret.session import open_sessions
from tests.support.node import InProcessNode
from tests.support.raw_client import RawClient

CAP = 200
MESSAGES = 6000


@pytest.fixture
def capped_node() -> Iterator[InProcessNode]:
    node = InProcessNode(max_unconfirmed_per_connection=CAP)
    try:
        yield node
    finally:
        node.stop()


def _most_unconfirmed(node: InProcessNode, publisher_done: threading.Event) -> tuple[int, bool]:
    """Sample the node's sessions until the publisher is done: the most publishes one had
    unconfirmed, and whether one was paused for its confirms."""
    most, paused = 0, False
    deadline = time.monotonic() + 60
    while not publisher_done.is_set() and time.monotonic() < deadline:
        seen = node.call(
            lambda: [(s.unconfirmed(), s.paused_for_confirms) for s in open_sessions(node.broker)]
        )
        for unconfirmed, was_paused in seen:
            most, paused = max(most, unconfirmed), paused or was_paused
        time.sleep(0.001)
    return most, paused


def test_a_publisher_ahead_of_its_confirms_is_paused(capped_node: InProcessNode) -> None:
    client = RawClient(capped_node.port, timeout=30)
    client.handshake()
    client.send(method_frame(1, m.QueueDeclare(0, "capped", False, True, False, False, False, {})))
    client.send(method_frame(1, m.ConfirmSelect(False)))
    persistent = BasicProperties(delivery_mode=2).encode()
    header = encode_header_payload(60, 100, persistent)
    publish = m.BasicPublish(0, "", "capped", False, False).encode()
    burst = b"".join(
        content_frames(1, publish, header, b"x" * 100, 131072) for _ in range(MESSAGES)
    )
    done = threading.Event()
    confirmed = 0

    def read_confirms() -> None:
        nonlocal confirmed
        while confirmed < MESSAGES:
            frame = client.read_method()
            if frame is None:
                break
            if isinstance(frame[1], m.BasicAck):
                confirmed = frame[1].delivery_tag
        done.set()

    reader = threading.Thread(target=read_confirms, daemon=True)
    reader.start()
    client.send(burst)  # durable queue, persistent messages: confirmed after each fsync
    most, paused = _most_unconfirmed(capped_node, done)
    reader.join(60)
    client.close()
    assert confirmed == MESSAGES
    # The cap holds, give or take the publishes of one turn's frames (three frames each).
    assert most <= CAP + FRAMES_PER_TURN // 3 + 1, most
    assert paused
