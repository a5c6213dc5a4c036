"""Malformed and hostile input gets RabbitMQ's hard errors; the node and other clients carry on."""

from __future__ import annotations

import struct

import pika
import pytest

from leveret.amqp import methods as m
from leveret.amqp.constants import PROTOCOL_HEADER
from leveret.amqp.frames import method_frame
from tests.support.node import InProcessNode
from tests.support.raw_client import RawClient


def _others_still_work(node: InProcessNode) -> None:
    conn = pika.BlockingConnection(pika.URLParameters(node.url))
    ch = conn.channel()
    ch.queue_declare("still-alive")
    ch.basic_publish("", "still-alive", b"ok")
    assert ch.basic_get("still-alive", auto_ack=True)[2] == b"ok"
    conn.close()


@pytest.fixture
def raw(node: InProcessNode):
    client = RawClient(node.port)
    yield client
    client.close()


def test_wrong_protocol_header(node: InProcessNode, raw: RawClient) -> None:
    raw.send(b"AMQP\x01\x01\x00\x0a")
    assert raw.read_raw() == PROTOCOL_HEADER
    _others_still_work(node)


def test_http_request_gets_protocol_header(node: InProcessNode, raw: RawClient) -> None:
    raw.send(b"GET / HTTP/1.1\r\n\r\n")
    assert raw.read_raw() == PROTOCOL_HEADER


def test_method_on_unopened_channel(node: InProcessNode, raw: RawClient) -> None:
    raw.handshake(channel=None)
    raw.send(method_frame(5, m.QueueDeclare(queue="x")))
    close = raw.expect_connection_close()
    assert (close.reply_code, close.reply_text) == (504, "CHANNEL_ERROR - expected 'channel.open'")
    _others_still_work(node)


def test_second_channel_open(node: InProcessNode, raw: RawClient) -> None:
    raw.handshake()
    raw.send(method_frame(1, m.ChannelOpen()))
    close = raw.expect_connection_close()
    assert (close.reply_code, close.reply_text) == (
        504,
        "CHANNEL_ERROR - second 'channel.open' seen",
    )


def test_body_without_header(node: InProcessNode, raw: RawClient) -> None:
    raw.handshake()
    raw.send(method_frame(1, m.BasicPublish(routing_key="q")))
    raw.send(struct.pack(">BHI", 3, 1, 3) + b"abc\xce")
    close = raw.expect_connection_close()
    assert close.reply_code == 505
    assert close.reply_text == (
        "UNEXPECTED_FRAME - expected content header for class 60, got non content header frame "
        "instead"
    )
    assert (close.class_id, close.method_id) == (60, 40)
    _others_still_work(node)


def test_body_larger_than_announced(node: InProcessNode, raw: RawClient) -> None:
    raw.handshake()
    raw.send(method_frame(1, m.BasicPublish(routing_key="q")))
    raw.send(struct.pack(">BHI", 2, 1, 14) + struct.pack(">HHQH", 60, 0, 2, 0) + b"\xce")
    raw.send(struct.pack(">BHI", 3, 1, 5) + b"abcde\xce")
    close = raw.expect_connection_close()
    assert close.reply_code == 501
    assert close.reply_text == "FRAME_ERROR - content body frame exceeds remaining content size"


def test_frame_above_frame_max(node: InProcessNode, raw: RawClient) -> None:
    raw.handshake()
    raw.send(struct.pack(">BHI", 1, 1, 200000))
    close = raw.expect_connection_close()
    assert close.reply_code == 501
    assert "frame_too_large" in close.reply_text
    _others_still_work(node)


def test_bad_frame_end(node: InProcessNode, raw: RawClient) -> None:
    raw.handshake()
    payload = m.QueueDeclare(queue="x").encode()
    raw.send(struct.pack(">BHI", 1, 1, len(payload)) + payload + b"\x00")
    close = raw.expect_connection_close()
    assert close.reply_code == 501


def test_unknown_method(node: InProcessNode, raw: RawClient) -> None:
    raw.handshake()
    raw.send(struct.pack(">BHIHH", 1, 1, 4, 60, 999) + b"\xce")
    close = raw.expect_connection_close()
    assert close.reply_code == 503
    _others_still_work(node)


def test_unknown_frame_type(node: InProcessNode, raw: RawClient) -> None:
    raw.handshake()
    raw.send(struct.pack(">BHI", 9, 1, 1) + b"x\xce")
    close = raw.expect_connection_close()
    assert close.reply_code == 501


def test_truncated_method_arguments(node: InProcessNode, raw: RawClient) -> None:
    raw.handshake()
    raw.send(struct.pack(">BHIHH", 1, 1, 5, 50, 10) + b"\x00\xce")
    close = raw.expect_connection_close()
    assert close.reply_code == 501
    _others_still_work(node)


def test_heartbeat_on_channel_is_unexpected(node: InProcessNode, raw: RawClient) -> None:
    raw.handshake()
    raw.send(struct.pack(">BHI", 8, 1, 0) + b"\xce")
    close = raw.expect_connection_close()
    assert close.reply_code == 505


def test_channel_flow_false_not_implemented(node: InProcessNode, raw: RawClient) -> None:
    raw.handshake()
    raw.send(method_frame(1, m.ChannelFlow(False)))
    close = raw.expect_connection_close()
    assert (close.reply_code, close.reply_text) == (540, "NOT_IMPLEMENTED - active=false")


def test_publish_with_immediate(node: InProcessNode, raw: RawClient) -> None:
    raw.handshake()
    raw.send(method_frame(1, m.BasicPublish(routing_key="q", immediate=True)))
    raw.send(struct.pack(">BHI", 2, 1, 14) + struct.pack(">HHQH", 60, 0, 0, 0) + b"\xce")
    close = raw.expect_connection_close()
    assert (close.reply_code, close.reply_text) == (540, "NOT_IMPLEMENTED - immediate=true")


def test_oversized_message_closes_channel_only(node: InProcessNode) -> None:
    small = InProcessNode(max_message_size=1000)
    try:
        raw = RawClient(small.port)
        raw.handshake()
        raw.send(method_frame(1, m.BasicPublish(routing_key="q")))
        raw.send(struct.pack(">BHI", 2, 1, 14) + struct.pack(">HHQH", 60, 0, 5000, 0) + b"\xce")
        raw.send(struct.pack(">BHI", 3, 1, 5000) + b"x" * 5000 + b"\xce")
        channel, close = raw.read_method()  # type: ignore[misc]
        assert channel == 1 and isinstance(close, m.ChannelClose)
        assert close.reply_code == 406
        assert (
            close.reply_text
            == "PRECONDITION_FAILED - message size 5000 is larger than configured max size 1000"
        )
        raw.send(method_frame(1, m.ChannelCloseOk()))
        raw.send(method_frame(1, m.ChannelOpen()))
        assert isinstance(raw.read_method()[1], m.ChannelOpenOk)  # type: ignore[index]
        raw.close()
    finally:
        small.stop()


def test_many_garbage_connections_do_not_hurt(node: InProcessNode) -> None:
    for i in range(30):
        client = RawClient(node.port)
        client.handshake()
        client.send(bytes((i * 37 + k) % 256 for k in range(500)))
        client.close()
    _others_still_work(node)
