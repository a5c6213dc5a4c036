"""A client's connection.close: the node answers close-ok and leaves the socket to the client.

Clients race on which side closes first; RabbitMQ lets the client do it and drops the socket
itself only after the heartbeat timeout (30 s at most). The connection's exclusive queues go at
close-ok, not when the socket finally closes.
"""

from __future__ import annotations

import contextlib
import socket
import time

import pika
import pika.exceptions
import pytest

from leveret.amqp import methods as m
from leveret.amqp.frames import method_frame
from leveret.session import open_sessions
from tests.support.node import InProcessNode, wait_for
from tests.support.rabbitmq import RabbitNode
from tests.support.raw_client import RawClient

# How long the socket must stay open after close-ok for the test to call it "left to the client".
LINGER_CHECKED_SECONDS = 0.5


def _open(port: int, heartbeat: int = 0) -> RawClient:
    client = RawClient(port)
    client.handshake(channel=None, heartbeat=heartbeat)
    return client


def _close(client: RawClient) -> None:
    client.send(method_frame(0, m.ConnectionClose(200, "bye", 0, 0)))
    while True:
        reply = client.read_method()
        assert reply is not None, "the socket closed before close-ok"
        if isinstance(reply[1], m.ConnectionCloseOk):
            return


def _open_after(client: RawClient, seconds: float) -> bool:
    """True if the node has not closed the socket within `seconds` (it sends nothing more)."""
    client.sock.settimeout(seconds)
    try:
        return client.sock.recv(1) != b""
    except TimeoutError:
        return True


def socket_left_to_client(port: int) -> bool:
    client = _open(port)
    try:
        _close(client)
        return _open_after(client, LINGER_CHECKED_SECONDS)
    finally:
        client.close()


def test_the_socket_is_left_for_the_client_to_close(node: InProcessNode) -> None:
    assert socket_left_to_client(node.port)


@pytest.mark.rabbitmq
def test_socket_after_close_ok_same_as_rabbitmq(
    node: InProcessNode,
    rabbitmq: RabbitNode,
) -> None:
    assert socket_left_to_client(rabbitmq.amqp_port) == socket_left_to_client(node.port)


def test_a_client_that_never_closes_is_dropped_after_the_heartbeat_timeout(
    node: InProcessNode,
) -> None:
    client = _open(node.port, heartbeat=1)
    try:
        _close(client)
        started = time.monotonic()
        client.sock.settimeout(10)
        with contextlib.suppress(ConnectionResetError):  # dropped with a reset: closed all the same
            assert client.sock.recv(1) == b""
        assert time.monotonic() - started < 10
    finally:
        client.close()


def test_frames_after_close_are_ignored_and_exclusive_queues_go_at_close_ok(
    node: InProcessNode,
) -> None:
    client = _open(node.port)
    try:
        client.send(method_frame(1, m.ChannelOpen()))
        client.read_method()
        client.send(method_frame(1, m.QueueDeclare(queue="closing-excl", exclusive=True)))
        assert isinstance(client.read_method()[1], m.QueueDeclareOk)  # type: ignore[index]
        _close(client)
        # Anything after close-ok is not handled: no reply, and the socket is still open.
        client.send(method_frame(1, m.QueueDeclare(queue="after-close")))
        assert _open_after(client, LINGER_CHECKED_SECONDS)

        observer = pika.BlockingConnection(pika.URLParameters(node.url))
        try:

            def queue_gone() -> bool:
                channel = observer.channel()
                try:
                    channel.queue_declare("closing-excl", passive=True)
                except pika.exceptions.ChannelClosedByBroker as closed:
                    return closed.reply_code == 404
                channel.close()
                return False

            wait_for(queue_gone, 5)
            channel = observer.channel()
            with pytest.raises(pika.exceptions.ChannelClosedByBroker) as refused:
                channel.queue_declare("after-close", passive=True)
            assert refused.value.reply_code == 404
        finally:
            observer.close()
    finally:
        client.sock.close()


def test_the_node_forgets_the_connection_when_the_client_closes(node: InProcessNode) -> None:
    client = _open(node.port)
    _close(client)
    client.sock.shutdown(socket.SHUT_RDWR)
    client.close()
    wait_for(lambda: not node.call(lambda: list(open_sessions(node.broker))), 5)
