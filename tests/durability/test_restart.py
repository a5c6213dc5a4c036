"""Restarts and crashes through real clients: what was confirmed survives, in order."""

from __future__ import annotations

import tempfile

import pika
import pytest

from tests.support.node import NodeProcess

PERSISTENT = pika.BasicProperties(delivery_mode=2)


@pytest.fixture
def data_dir():
    with tempfile.TemporaryDirectory(prefix="leveret-durable-") as path:
        yield path


def _connect(node: NodeProcess) -> pika.BlockingConnection:
    return pika.BlockingConnection(pika.URLParameters(node.url))


def _drain(channel, queue: str) -> list[tuple[bytes, bool, object]]:
    got = []
    while True:
        method, props, body = channel.basic_get(queue, auto_ack=True)
        if method is None:
            return got
        got.append((body, method.redelivered, props))


def test_durable_persistent_messages_survive_clean_restart(data_dir: str) -> None:
    node = NodeProcess(data_dir).start()
    try:
        conn = _connect(node)
        ch = conn.channel()
        ch.confirm_delivery()
        ch.queue_declare("orders", durable=True)
        ch.queue_declare("scratch", durable=False)
        ch.queue_declare("mine", durable=True, exclusive=True)
        for i in range(100):
            props = pika.BasicProperties(
                delivery_mode=2, headers={"n": i}, content_type="text/plain", correlation_id=f"c{i}"
            )
            ch.basic_publish("", "orders", f"m{i}".encode(), props)
        ch.basic_publish("", "orders", b"transient", pika.BasicProperties(delivery_mode=1))
        ch.basic_publish("", "scratch", b"gone", PERSISTENT)
        conn.close()
        assert node.terminate() == 0
        node.start()
        conn = _connect(node)
        ch = conn.channel()
        got = _drain(ch, "orders")
        assert [body for body, _, _ in got] == [f"m{i}".encode() for i in range(100)]
        assert all(not redelivered for _, redelivered, _ in got)
        assert got[7][2].headers == {"n": 7}
        assert got[7][2].content_type == "text/plain"
        assert got[7][2].correlation_id == "c7"
        assert got[7][2].delivery_mode == 2
        for gone in ("scratch", "mine"):
            with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
                conn.channel().queue_declare(gone, passive=True)
            assert info.value.reply_code == 404
        conn.close()
    finally:
        node.cleanup()


def test_delivered_unacked_comes_back_redelivered(data_dir: str) -> None:
    node = NodeProcess(data_dir).start()
    try:
        conn = _connect(node)
        ch = conn.channel()
        ch.confirm_delivery()
        ch.queue_declare("work", durable=True)
        for i in range(3):
            ch.basic_publish("", "work", f"w{i}".encode(), PERSISTENT)
        _method, _, body = ch.basic_get("work")
        assert body == b"w0"
        acked, _, _ = ch.basic_get("work")
        ch.basic_ack(acked.delivery_tag)
        # make the ack reach the node before the crash
        ch.queue_declare("work", durable=True, passive=True)
        node.kill()
        node.start()
        conn = _connect(node)
        got = _drain(conn.channel(), "work")
        assert [(body, redelivered) for body, redelivered, _ in got] in (
            [(b"w0", True), (b"w2", False)],
            # acks are made durable lazily: a crash may bring an acked message back, redelivered
            [(b"w0", True), (b"w1", True), (b"w2", False)],
        )
        conn.close()
    finally:
        node.cleanup()


def test_confirmed_messages_survive_kill(data_dir: str) -> None:
    node = NodeProcess(data_dir).start()
    try:
        conn = _connect(node)
        ch = conn.channel()
        ch.confirm_delivery()
        ch.queue_declare("safe", durable=True)
        for i in range(500):
            ch.basic_publish("", "safe", str(i).encode(), PERSISTENT)  # returns once confirmed
        node.kill()
        node.start()
        conn = _connect(node)
        got = _drain(conn.channel(), "safe")
        assert [int(body) for body, _, _ in got] == list(range(500))
        conn.close()
    finally:
        node.cleanup()


def test_durable_exchanges_and_bindings_survive(data_dir: str) -> None:
    node = NodeProcess(data_dir).start()
    try:
        conn = _connect(node)
        ch = conn.channel()
        ch.exchange_declare("events", "topic", durable=True)
        ch.exchange_declare("temp-ex", "fanout", durable=False)
        ch.queue_declare("audit", durable=True, arguments={"x-max-length": 1000})
        ch.queue_bind("audit", "events", "user.*")
        conn.close()
        assert node.terminate() == 0
        node.start()
        conn = _connect(node)
        ch = conn.channel()
        ch.exchange_declare("events", "topic", durable=True, passive=True)
        # the arguments survived: redeclaring with others is still refused
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            conn.channel().queue_declare("audit", durable=True, arguments={"x-max-length": 5})
        assert info.value.reply_code == 406
        with pytest.raises(pika.exceptions.ChannelClosedByBroker):
            conn.channel().exchange_declare("temp-ex", "fanout", passive=True)
        ch.confirm_delivery()
        ch.basic_publish("events", "user.created", b"hello", PERSISTENT)
        assert _drain(ch, "audit")[0][0] == b"hello"
        conn.close()
    finally:
        node.cleanup()


def test_more_messages_than_the_memory_window(data_dir: str) -> None:
    """Past the window messages wait on disk and come back in order."""
    node = NodeProcess(data_dir).start()
    try:
        conn = _connect(node)
        ch = conn.channel()
        ch.confirm_delivery()
        ch.queue_declare("deep", durable=True)
        count = 6000
        for i in range(count):
            ch.basic_publish(
                "", "deep", str(i).encode(), PERSISTENT if i % 3 else pika.BasicProperties()
            )
        assert ch.queue_declare("deep", durable=True, passive=True).method.message_count == count
        got = _drain(ch, "deep")
        assert [int(body) for body, _, _ in got] == list(range(count))
        conn.close()
    finally:
        node.cleanup()


def _api(node: NodeProcess, method: str, path: str, body: dict | None = None) -> object:
    import base64
    import json
    import urllib.request

    request = urllib.request.Request(
        f"http://127.0.0.1:{node.ports['mgmt']}{path}",
        data=json.dumps(body).encode() if body is not None else None,
        method=method,
        headers={
            "Authorization": "Basic " + base64.b64encode(b"guest:guest").decode(),
            "Content-Type": "application/json",
        },
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        payload = response.read()
    return json.loads(payload) if payload else None


def test_policies_users_and_vhosts_survive_restart(data_dir: str) -> None:
    node = NodeProcess(data_dir).start()
    try:
        _api(node, "PUT", "/api/vhosts/staging")
        _api(node, "PUT", "/api/users/alice", {"password": "s3cret", "tags": "monitoring"})
        _api(
            node,
            "PUT",
            "/api/permissions/staging/alice",
            {"configure": ".*", "write": ".*", "read": ".*"},
        )
        _api(
            node,
            "PUT",
            "/api/policies/%2F/cap",
            {"pattern": "^capped$", "definition": {"max-length": 2}, "apply-to": "queues"},
        )
        assert node.terminate() == 0
        node.start()
        assert any(p["name"] == "cap" for p in _api(node, "GET", "/api/policies"))  # type: ignore[union-attr]
        conn = pika.BlockingConnection(
            pika.URLParameters(f"amqp://alice:s3cret@127.0.0.1:{node.ports['amqp']}/staging")
        )
        conn.close()
        conn = _connect(node)
        ch = conn.channel()
        ch.queue_declare("capped")
        for i in range(5):
            ch.basic_publish("", "capped", str(i).encode())
        assert [body for body, _, _ in _drain(ch, "capped")] == [b"3", b"4"]
        conn.close()
    finally:
        node.cleanup()


def test_deleted_bindings_stay_deleted_after_restart(data_dir: str) -> None:
    """Deleting a durable queue or exchange removes its bindings from disk too: a queue declared
    again under the same name does not get them back at the next boot."""
    node = NodeProcess(data_dir).start()
    try:
        conn = _connect(node)
        ch = conn.channel()
        ch.exchange_declare("ev", "direct", durable=True)
        ch.exchange_declare("ev2", "direct", durable=True)
        ch.queue_declare("sink", durable=True)
        ch.queue_bind("sink", "ev", "k")
        ch.exchange_bind("ev2", "ev", "k2")
        ch.queue_delete("sink")
        ch.exchange_delete("ev2")
        ch.queue_declare("sink", durable=True)
        ch.exchange_declare("ev2", "direct", durable=True)
        ch.queue_bind("sink", "ev2", "k2")
        conn.close()
        assert node.terminate() == 0
        node.start()
        conn = _connect(node)
        ch = conn.channel()
        ch.confirm_delivery()
        ch.basic_publish("ev", "k", b"old binding", PERSISTENT, mandatory=False)
        ch.basic_publish("ev", "k2", b"old e2e binding", PERSISTENT)
        ch.basic_publish("ev2", "k2", b"new binding", PERSISTENT)
        assert [body for body, _, _ in _drain(ch, "sink")] == [b"new binding"]
        conn.close()
    finally:
        node.cleanup()
