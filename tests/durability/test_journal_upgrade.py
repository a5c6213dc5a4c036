"""Upgrading a lone node whose definitions an earlier version kept in its own journal.

The data directory is made as that version left it: messages of a durable queue on disk, its
definitions in definitions.log, and no replicated store. The node imports the journal once, and
every definition and message is there, through real clients.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import urllib.request
from base64 import b64encode
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pika
import pytest

from leveret.auth import hash_password
from tests.support.node import NodeProcess

PERSISTENT = pika.BasicProperties(delivery_mode=2)


def _journal(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps({"op": "put", "record": record}) + "\n" for record in records)


EVERYTHING = {"configure": ".*", "write": ".*", "read": ".*"}
OLD_JOURNAL = [
    {"kind": "vhost", "name": "/"},
    {"kind": "vhost", "name": "shop"},
    {
        "kind": "user", "name": "guest", "password_hash": hash_password("guest"),
        "tags": ["administrator"],
    },
    {"kind": "user", "name": "alice", "password_hash": hash_password("s3cret"), "tags": []},
    {"kind": "permission", "user": "guest", "vhost": "/", **EVERYTHING},
    {"kind": "permission", "user": "alice", "vhost": "shop", **EVERYTHING},
    {
        "kind": "exchange", "vhost": "/", "name": "events", "type": "topic", "auto_delete": False,
        "internal": False, "arguments": {}, "argument_types": {},
    },
    {
        "kind": "queue", "vhost": "/", "name": "audit", "auto_delete": False,
        "arguments": {"x-max-length": 1000}, "argument_types": {"x-max-length": "I"},
    },
    {
        "kind": "binding", "vhost": "/", "source": "events", "destination": "audit",
        "destination_kind": "queue", "routing_key": "user.*", "arguments": {},
    },
    {
        "kind": "registry", "vhost": "/",
        "policies": [
            {
                "policy_kind": "policy", "vhost": "/", "name": "cap", "pattern": "^audit$",
                "definition": {"max-length": 5000}, "priority": 1, "apply-to": "queues",
            }
        ],
        "parameters": [],
    },
]  # fmt: skip


@pytest.fixture
def data_dir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="leveret-upgrade-") as path:
        yield Path(path)


def _as_an_earlier_version_left_it(data_dir: Path) -> None:
    """Messages stay where they are; the definitions go back into a journal."""
    shutil.rmtree(data_dir / "cluster" / "raft")
    (data_dir / "cluster" / "shares-definitions").unlink()
    (data_dir / "definitions.log").write_text(_journal(OLD_JOURNAL))


def _policies(node: NodeProcess) -> list[dict[str, Any]]:
    request = urllib.request.Request(f"http://127.0.0.1:{node.ports['mgmt']}/api/policies")
    request.add_header("Authorization", "Basic " + b64encode(b"guest:guest").decode())
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)  # type: ignore[no-any-return]


def test_a_journal_left_by_an_earlier_version_is_imported_with_its_messages(
    data_dir: Path,
) -> None:
    node = NodeProcess(str(data_dir)).start()
    try:
        with pika.BlockingConnection(pika.URLParameters(node.url)) as connection:
            channel = connection.channel()
            channel.confirm_delivery()
            channel.queue_declare("audit", durable=True, arguments={"x-max-length": 1000})
            for number in range(3):
                channel.basic_publish("", "audit", b"m%d" % number, PERSISTENT)
        assert node.terminate() == 0
        _as_an_earlier_version_left_it(data_dir)

        for _ in range(2):  # imported once; the second start finds it in the store
            node.start()
            assert not (data_dir / "definitions.log").exists()
            assert (data_dir / "definitions.log.imported").exists()
            with pika.BlockingConnection(pika.URLParameters(node.url)) as connection:
                channel = connection.channel()
                ok = channel.queue_declare("audit", durable=True, passive=True)
                assert ok.method.message_count == 3
                with pytest.raises(pika.exceptions.ChannelClosedByBroker) as refused:
                    connection.channel().queue_declare(
                        "audit", durable=True, arguments={"x-max-length": 5}
                    )
                assert refused.value.reply_code == 406
                channel.exchange_declare("events", "topic", durable=True, passive=True)
            shop = f"amqp://alice:s3cret@127.0.0.1:{node.ports['amqp']}/shop"
            pika.BlockingConnection(pika.URLParameters(shop)).close()
            assert [policy["name"] for policy in _policies(node)] == ["cap"]
            assert node.terminate() == 0

        node.start()
        with pika.BlockingConnection(pika.URLParameters(node.url)) as connection:
            channel = connection.channel()
            channel.confirm_delivery()
            channel.basic_publish("events", "user.created", b"routed", PERSISTENT)
            bodies = []
            while (got := channel.basic_get("audit", auto_ack=True))[0] is not None:
                bodies.append(got[2])
            assert bodies == [b"m0", b"m1", b"m2", b"routed"]
    finally:
        node.cleanup()


def test_a_new_node_starts_with_rabbitmqs_defaults_in_the_store(data_dir: Path) -> None:
    node = NodeProcess(str(data_dir)).start()
    try:
        pika.BlockingConnection(pika.URLParameters(node.url)).close()
        assert not (data_dir / "definitions.log").exists()
        assert (data_dir / "cluster" / "shares-definitions").exists()
    finally:
        node.cleanup()
