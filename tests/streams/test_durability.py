"""A stream survives its node: a clean restart and a SIGKILL keep every confirmed message at its
offset, and the offsets continue where they were."""

from __future__ import annotations

import threading
from pathlib import Path

import pika
import pika.exceptions

from leveret.testing import LeveretProcess
from tests.cluster.processes import queue_visible, running_cluster
from tests.streams.support import declare_stream, publish, read
from tests.support.node import wait_for


def _node(data_dir: Path) -> LeveretProcess:
    return LeveretProcess(str(data_dir)).start()


def test_a_clean_restart_keeps_the_log_and_its_retention(tmp_path: Path) -> None:
    node = _node(tmp_path)
    try:
        with pika.BlockingConnection(pika.URLParameters(node.url)) as conn:
            ch = conn.channel()
            ch.confirm_delivery()
            declare_stream(ch, "kept", max_length_bytes=3000, stream_max_segment_size_bytes=1000)
            publish(ch, "kept", [f"m{i}".encode() * 20 for i in range(60)], delivery_mode=1)
            kept = ch.queue_declare("kept", passive=True).method.message_count
        assert node.terminate() == 0
        node = _node(tmp_path)
        with pika.BlockingConnection(pika.URLParameters(node.url)) as conn:
            ch = conn.channel()
            ch.confirm_delivery()
            assert ch.queue_declare("kept", passive=True).method.message_count == kept
            got = read(ch, "kept", "first", count=kept)
            assert [offset for offset, _ in got] == list(range(60 - kept, 60))
            assert got[-1][1] == b"m59" * 20
            publish(ch, "kept", [b"next"])
            assert read(ch, "kept", "last", count=1) == [(60, b"next")]
    finally:
        node.cleanup()


def test_sigkill_loses_no_confirmed_message(tmp_path: Path) -> None:
    node = _node(tmp_path)
    confirmed: list[int] = []
    try:
        with pika.BlockingConnection(pika.URLParameters(node.url)) as conn:
            ch = conn.channel()
            ch.confirm_delivery()
            declare_stream(ch, "killed")
        proc = node.proc
        assert proc is not None
        killer = threading.Timer(1.0, proc.kill)
        conn = pika.BlockingConnection(pika.URLParameters(node.url))
        ch = conn.channel()
        ch.confirm_delivery()
        killer.start()
        try:
            for i in range(100_000):  # bounded; the kill ends it within a second or so
                ch.basic_publish("", "killed", str(i).encode())
                confirmed.append(i)
        except (pika.exceptions.AMQPConnectionError, pika.exceptions.AMQPChannelError):
            pass
        finally:
            killer.join(5)
        proc.wait(10)
        assert confirmed, "nothing was confirmed before the kill"
        node = _node(tmp_path)
        with pika.BlockingConnection(pika.URLParameters(node.url)) as conn:
            ch = conn.channel()
            count = ch.queue_declare("killed", passive=True).method.message_count
            # The publish in flight at the kill may have made it to disk unconfirmed.
            assert len(confirmed) <= count <= len(confirmed) + 1
            got = read(ch, "killed", "first", count=count, prefetch=1000, timeout=20)
            assert got[: len(confirmed)] == [(i, str(i).encode()) for i in confirmed]
    finally:
        node.cleanup()


def test_sigkill_of_the_home_node_keeps_what_another_node_confirmed() -> None:
    with running_cluster(3) as cluster:
        a, b, c = (node.process for node in cluster.nodes)
        assert a is not None and b is not None and c is not None
        with pika.BlockingConnection(pika.URLParameters(a.url)) as conn:
            declare_stream(conn.channel(), "homed-on-a")
        for other in (b, c):
            wait_for(lambda other=other: queue_visible(other.url, "homed-on-a"), 10, 0.02)
        with pika.BlockingConnection(pika.URLParameters(b.url)) as conn:
            ch = conn.channel()
            ch.confirm_delivery()
            publish(ch, "homed-on-a", [b"%d" % i for i in range(300)])
            cluster.nodes[0].kill()  # at once: only the fsync stands behind those confirms
        cluster.nodes[0].start(same_ports=True)
        c_url = c.url
        wait_for(lambda: _count_through(c_url, "homed-on-a") == 300, 30, 0.2)
        with pika.BlockingConnection(pika.URLParameters(c_url)) as conn:
            got = read(conn.channel(), "homed-on-a", "first", count=300, prefetch=300)
        assert got == [(i, b"%d" % i) for i in range(300)]


def _count_through(url: str, queue: str) -> int:
    """The stream's count through a node, or -1 while its home node is still coming back."""
    try:
        with pika.BlockingConnection(pika.URLParameters(url)) as conn:
            return int(conn.channel().queue_declare(queue, passive=True).method.message_count)
    except pika.exceptions.AMQPError:
        return -1
