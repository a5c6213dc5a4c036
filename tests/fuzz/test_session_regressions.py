"""Inputs the node fuzzer found, pinned on a real node over a socket: each escaped the error
mapper (the connection dropped without its connection.close) before its fix."""

from __future__ import annotations

import pika

from leveret.amqp import methods as m
from leveret.amqp.constants import PROTOCOL_HEADER
from leveret.amqp.frames import method_frame
from tests.support.node import InProcessNode
from tests.support.raw_client import RawClient


def test_frames_pipelined_after_a_refused_connection_open_are_not_handled(
    node: InProcessNode,
) -> None:
    # A client that sends its channel's methods in the same write as connection.open to a vhost
    # that does not exist: the channel methods ran with no vhost and raised AttributeError.
    raw = RawClient(node.port)
    try:
        raw.send(PROTOCOL_HEADER)
        raw.read_method()
        raw.send(method_frame(0, m.ConnectionStartOk({}, "PLAIN", b"\x00guest\x00guest", "en_US")))
        raw.read_method()
        raw.send(
            method_frame(0, m.ConnectionTuneOk(2047, 131072, 0))
            + method_frame(0, m.ConnectionOpen("no-such-vhost"))
            + method_frame(1, m.ChannelOpen())
            + method_frame(1, m.QueueDeclare(queue="q"))
            + method_frame(1, m.BasicConsume(queue="q"))
        )
        close = raw.expect_connection_close()
        assert (close.reply_code, close.reply_text) == (
            530,
            "NOT_ALLOWED - vhost no-such-vhost not found",
        )
        raw.send(method_frame(0, m.ConnectionCloseOk()))
        assert raw.read_frame() is None
    finally:
        raw.close()
    conn = pika.BlockingConnection(pika.URLParameters(node.url))
    assert conn.channel().queue_declare("", exclusive=True).method.queue
    conn.close()
