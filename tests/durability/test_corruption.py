"""Damaged files on disk: the node starts, cuts off what is damaged, and keeps what is intact."""

from __future__ import annotations

import glob
import os
import tempfile

import pika

from tests.support.node import NodeProcess

PERSISTENT = pika.BasicProperties(delivery_mode=2)


def _fill(node: NodeProcess, queue: str, bodies: list[bytes]) -> None:
    conn = pika.BlockingConnection(pika.URLParameters(node.url))
    ch = conn.channel()
    ch.confirm_delivery()
    ch.queue_declare(queue, durable=True)
    for body in bodies:
        ch.basic_publish("", queue, body, PERSISTENT)
    conn.close()


def _drain(node: NodeProcess, queue: str) -> list[bytes]:
    conn = pika.BlockingConnection(pika.URLParameters(node.url))
    ch = conn.channel()
    got = []
    while True:
        method, _, body = ch.basic_get(queue, auto_ack=True)
        if method is None:
            break
        got.append(body)
    conn.close()
    return got


def _segments(data_dir: str) -> list[str]:
    return sorted(glob.glob(os.path.join(data_dir, "msgs", "*", "queues", "*", "*.seg")))


def test_truncated_segment_tail() -> None:
    with tempfile.TemporaryDirectory() as data_dir:
        node = NodeProcess(data_dir).start()
        try:
            bodies = [f"msg-{i}".encode() * 10 for i in range(10)]
            _fill(node, "q", bodies)
            node.kill()
            (segment,) = _segments(data_dir)
            with open(segment, "r+b") as handle:
                handle.truncate(os.path.getsize(segment) - 7)  # tear the last record
            node.start()
            assert _drain(node, "q") == bodies[:9]
        finally:
            node.cleanup()


def test_bit_flipped_segment_tail() -> None:
    with tempfile.TemporaryDirectory() as data_dir:
        node = NodeProcess(data_dir).start()
        try:
            bodies = [f"msg-{i}".encode() * 10 for i in range(10)]
            _fill(node, "q", bodies)
            node.kill()
            (segment,) = _segments(data_dir)
            with open(segment, "r+b") as handle:
                handle.seek(os.path.getsize(segment) - 5)
                byte = handle.read(1)
                handle.seek(-1, os.SEEK_CUR)
                handle.write(bytes([byte[0] ^ 0x40]))
            node.start()
            got = _drain(node, "q")
            assert got == bodies[:9]
            _fill(node, "q", [b"after"])  # and the queue takes new messages
            assert _drain(node, "q") == [b"after"]
        finally:
            node.cleanup()


def test_missing_shared_body_file() -> None:
    with tempfile.TemporaryDirectory() as data_dir:
        node = NodeProcess(data_dir).start()
        try:
            conn = pika.BlockingConnection(pika.URLParameters(node.url))
            ch = conn.channel()
            ch.confirm_delivery()
            ch.exchange_declare("fan", "fanout", durable=True)
            for name in ("a", "b"):
                ch.queue_declare(name, durable=True)
                ch.queue_bind(name, "fan")
            ch.basic_publish("fan", "", b"L" * 20000, PERSISTENT)  # stored once, shared
            ch.basic_publish("", "a", b"small", PERSISTENT)  # embedded in the queue's own record
            conn.close()
            node.kill()
            shared = glob.glob(os.path.join(data_dir, "msgs", "*", "shared", "*"))
            assert shared, "the large body should be in the shared store"
            for path in shared:
                os.unlink(path)
            node.start()
            assert _drain(node, "a") == [b"small"]
            assert _drain(node, "b") == []
        finally:
            node.cleanup()
