"""Hostile clients at scale against a node process: abandoned handshakes by the thousand, the
node at its file-descriptor limit, slowloris, a consumer that never reads, frame_max violations.

Each test checks what the node does to the hostile clients, that its memory stays under a
watermark, and that a well-behaved client is still served; how fast it is served is measured
by bench/hostile_clients.py and recorded in the README, not asserted here.
"""

from __future__ import annotations

import resource
import socket
import struct
import time
from collections.abc import Iterator

import pika
import pytest

from leveret.amqp import methods as m
from leveret.amqp.frames import method_frame
from tests.hostile.clients import (
    Slowloris,
    abandon_mid_handshake,
    closed_by_peer,
    connect,
    handshake,
    open_fds,
    read_close,
    round_trips,
    rss_bytes,
)
from tests.support.node import NodeProcess, wait_for

ABANDONED = 10_000
# What the node may hold beyond its idle size while under attack.
MEMORY_HEADROOM = 200 * 1024 * 1024


@pytest.fixture(scope="module")
def node() -> Iterator[NodeProcess]:
    _raise_fd_limit(ABANDONED + 1000)  # inherited by the node process
    with NodeProcess() as running:
        yield running


def _raise_fd_limit(wanted: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, hard), hard))
    assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] >= wanted, "raise the hard fd limit"


def _served(node: NodeProcess) -> None:
    """A well-behaved client gets its work done."""
    assert round_trips(node.url, 0.5) > 0


def test_ten_thousand_connections_abandoned_mid_handshake(node: NodeProcess) -> None:
    pid = node.proc.pid  # type: ignore[union-attr]
    idle_rss, idle_fds = rss_bytes(pid), open_fds(pid)
    socks: list[socket.socket] = []
    try:
        for index in range(ABANDONED):
            socks.append(abandon_mid_handshake(node.ports["amqp"], index))
        wait_for(lambda: open_fds(pid) >= idle_fds + ABANDONED, timeout=60)
        _served(node)
        assert rss_bytes(pid) < idle_rss + MEMORY_HEADROOM
    finally:
        for sock in socks:
            sock.close()
    # Abandoned sockets are released: none is leaked by the half-done handshakes.
    wait_for(lambda: open_fds(pid) <= idle_fds + 10, timeout=60)
    _served(node)


def test_a_node_at_its_fd_limit_keeps_running_and_serves_again_once_fds_free() -> None:
    with NodeProcess() as limited:
        pid = limited.proc.pid  # type: ignore[union-attr]
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (256, 256))
        socks = []
        try:
            for index in range(400):  # more than the node can hold: the rest wait in the backlog
                socks.append(abandon_mid_handshake(limited.ports["amqp"], index))
            wait_for(lambda: open_fds(pid) >= 250, timeout=10)
            assert limited.proc.poll() is None  # type: ignore[union-attr]
            # Past a tick of the memory monitor and of gossip, both of which read the node's
            # memory: they did so with a new descriptor each time, which failed here and ended
            # the memory alarm's task for good.
            time.sleep(1.5)
        finally:
            for sock in socks:
                sock.close()
        wait_for(lambda: _serves(limited), timeout=30, interval=0.5)
        assert limited.proc.poll() is None  # type: ignore[union-attr]
        assert "statm" not in limited.log_tail(400)


def _serves(node: NodeProcess) -> bool:
    try:
        return round_trips(node.url, 0.1) > 0
    except (pika.exceptions.AMQPError, OSError):
        return False


def test_slowloris_clients_are_closed_at_the_handshake_timeout(node: NodeProcess) -> None:
    slow = Slowloris(node.ports["amqp"], clients=100, interval=1.0)
    try:
        _served(node)
        slow.wait(30)
        assert len(slow.closed_after) == 100
        # RabbitMQ's handshake_timeout is 10 s, counted from the connection's start.
        assert all(9.0 <= after < 15.0 for after in slow.closed_after), slow.closed_after
    finally:
        slow.stop()
    _served(node)


def test_a_consumer_that_never_reads_is_not_buffered_without_bound(node: NodeProcess) -> None:
    pid = node.proc.pid  # type: ignore[union-attr]
    idle_rss = rss_bytes(pid)
    message, count = b"m" * 256 * 1024, 200  # 50 MiB
    sock = connect(node.ports["amqp"])
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    try:
        handshake(sock)
        publisher = pika.BlockingConnection(pika.URLParameters(node.url))
        channel = publisher.channel()
        channel.queue_declare("never-read", auto_delete=True)
        sock.sendall(method_frame(1, m.BasicConsume(queue="never-read", no_ack=True)))
        for _ in range(count):
            channel.basic_publish("", "never-read", message)
        # What the node sent is bounded by its write buffer's high-water mark and the kernel's
        # buffers: the rest waits in the queue.
        wait_for(
            lambda: (
                channel.queue_declare("never-read", passive=True).method.message_count >= count - 40
            ),
            timeout=30,
        )
        assert rss_bytes(pid) < idle_rss + len(message) * count + MEMORY_HEADROOM
        _served(node)
        publisher.close()
    finally:
        sock.close()


def test_frames_above_frame_max_close_the_connection_without_buffering(
    node: NodeProcess,
) -> None:
    pid = node.proc.pid  # type: ignore[union-attr]
    idle_rss = rss_bytes(pid)
    for _ in range(50):
        sock = connect(node.ports["amqp"])
        try:
            handshake(sock, frame_max=4096)
            payload = method_frame(1, m.BasicPublish(routing_key="q"))[7:-1]
            big = payload + b"\x00" * 100_000
            sock.sendall(struct.pack(">BHI", 1, 1, len(big)) + big + b"\xce")
            close = read_close(sock)
            assert close is not None and close.reply_code == 501
            assert "frame_too_large" in close.reply_text
        finally:
            sock.close()
    # A frame head announcing 4 GiB: refused at once, nothing waits for the bytes.
    sock = connect(node.ports["amqp"])
    try:
        handshake(sock)
        sock.sendall(struct.pack(">BHI", 1, 1, 0xFFFFFFF0))
        close = read_close(sock)
        assert close is not None and close.reply_code == 501
        assert closed_by_peer(sock, 5.0)
    finally:
        sock.close()
    assert rss_bytes(pid) < idle_rss + MEMORY_HEADROOM
    _served(node)


def test_the_fd_limit_is_high_enough_for_these_tests() -> None:
    # The node inherits the test process's limit: machines that run these tests must allow it.
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    assert hard >= ABANDONED + 1000, f"raise the hard fd limit (ulimit -Hn {ABANDONED + 1000})"
