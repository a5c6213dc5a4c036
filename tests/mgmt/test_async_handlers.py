"""Handlers that wait: management writes on a node whose definitions a shared store decides.

The store here is a stand-in installed on `broker.shared` (these tests only): it records each
command, yields to the loop once, then applies a few kinds of command to the real model, as the
cluster's mirror would, or answers with a prepared outcome, or fails. Clustered nodes with the
real store are tested with the cluster.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from leveret.auth import check_password
from leveret.broker import Broker, Permission
from leveret.definitions_log import decode_arguments
from leveret.metadata import Command, MetadataUnavailable, Reply
from leveret.metadata_commands import binding_of, exchange_decl
from proto.metadata_schema import (
    AddVhost,
    Bind,
    BindingRecord,
    DeclareExchange,
    DeclareQueue,
    DeleteQueue,
    ExchangeRecord,
    SetPermissions,
    command_json,
    encode_command,
    record_from_json,
)
from tests.mgmt.conftest import ManagedNode
from tests.mgmt.test_http_server import AUTH, read_responses

Applier = Callable[[Broker, Any], Reply]


def _add_vhost(broker: Broker, command: AddVhost) -> Reply:
    if command.name in broker.vhosts:
        return {"status": "exists"}
    broker.add_vhost(command.name)
    return {"status": "created"}


def _set_permissions(broker: Broker, command: SetPermissions) -> Reply:
    permission = Permission(command.configure, command.write, command.read)
    broker.permissions[(command.user, command.vhost)] = permission
    return {"status": "ok"}


def _declare_queue(broker: Broker, command: DeclareQueue) -> Reply:
    vhost = broker.vhosts[command.vhost]
    if command.name in vhost.queues:
        return {"status": "exists", "queue": command_json(command)}
    vhost.add_queue(
        command.name,
        durable=command.durable,
        exclusive_owner=None,
        auto_delete=command.auto_delete,
        arguments=decode_arguments(command.arguments),
        argument_types=command.argument_types,
    )
    return {"status": "created", "queue": command_json(command)}


def _delete_queue(broker: Broker, command: DeleteQueue) -> Reply:
    vhost = broker.vhosts[command.vhost]
    if command.name not in vhost.queues:
        return {"status": "not_found"}
    vhost.delete_queue(command.name)
    return {"status": "deleted"}


def _declare_exchange(broker: Broker, command: DeclareExchange) -> Reply:
    vhost = broker.vhosts[command.vhost]
    exchange = record_from_json(ExchangeRecord, command_json(command))
    vhost.create_exchange(command.name, exchange_decl(exchange))
    return {"status": "created", "exchange": command_json(command)}


def _bind(broker: Broker, command: Bind) -> Reply:
    vhost = broker.vhosts[command.vhost]
    binding = record_from_json(BindingRecord, command_json(command))
    vhost.exchanges[command.source].add_binding(binding_of(binding))
    return {"status": "created"}


APPLIERS: dict[type, Applier] = {
    AddVhost: _add_vhost,
    SetPermissions: _set_permissions,
    DeclareQueue: _declare_queue,
    DeleteQueue: _delete_queue,
    DeclareExchange: _declare_exchange,
    Bind: _bind,
}


class FakeSharedStore:
    """A MetadataStore that decides everything at once, on this node alone."""

    node_name = "fake-home-node"

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        # What was submitted, as the log would hold it.
        self.commands: list[dict[str, Any]] = []
        # Answered instead of applying the next commands, oldest first.
        self.outcomes: deque[Reply] = deque()
        self.failure: Exception | None = None

    async def submit(self, command: Command) -> Reply:
        self.commands.append(json.loads(encode_command(command)))
        await asyncio.sleep(0)  # the reply is awaited, as a real decision is
        if self.failure is not None:
            raise self.failure
        if self.outcomes:
            return self.outcomes.popleft()
        applier = APPLIERS.get(type(command))
        # Commands without an applier are "decided" and change nothing: the handler must not
        # have changed the model either.
        return applier(self.broker, command) if applier is not None else {"status": "created"}

    # One node: its model is always current.
    may_lag = False

    async def catch_up(self) -> None:
        return None

    def submit_eventually(self, command: Command) -> None:
        self.commands.append(json.loads(encode_command(command)))

    def ops(self) -> list[str]:
        return [command["op"] for command in self.commands]


@pytest.fixture
def store(managed: ManagedNode) -> Iterator[FakeSharedStore]:
    fake = FakeSharedStore(managed.broker)
    real = managed.broker.metadata
    managed.node.call(lambda: setattr(managed.broker, "metadata", fake))
    try:
        yield fake
    finally:
        managed.node.call(lambda: setattr(managed.broker, "metadata", real))


def _request(method: str, path: str, body: str = "") -> bytes:
    head = f"{method} {path} HTTP/1.1\r\nHost: x\r\n{AUTH}"
    if body:
        head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    return (head + "\r\n" + body).encode()


def _status(response: bytes) -> int:
    return int(response.split(b" ", 2)[1])


def test_pipelined_requests_come_back_in_order_while_one_awaits(
    managed: ManagedNode, store: FakeSharedStore
) -> None:
    # Each GET is answered at once, each write only after the store decides: had a GET been
    # answered before the write ahead of it, the statuses below would be out of order.
    requests = [
        ("PUT", "/api/vhosts/piped", "{}", 201),
        ("GET", "/api/vhosts/piped", "", 200),
        ("PUT", "/api/queues/piped/q1", '{"durable": true}', 201),
        ("GET", "/api/queues/piped/q1", "", 200),
        ("DELETE", "/api/queues/piped/q1", "", 204),
        ("GET", "/api/queues/piped/q1", "", 404),
        ("GET", "/api/whoami", "", 200),
    ]
    with socket.create_connection(("127.0.0.1", managed.mgmt_port), timeout=10) as sock:
        sock.sendall(b"".join(_request(m, path, body) for m, path, body, _ in requests))
        responses = read_responses(sock, len(requests))
        # The connection is still usable afterwards: reading resumed.
        sock.sendall(_request("GET", "/api/vhosts/piped"))
        (after,) = read_responses(sock, 1)
    assert [_status(r) for r in responses] == [status for *_, status in requests]
    assert _status(after) == 200
    assert store.ops() == ["add_vhost", "set_permissions", "declare_queue", "delete_queue"]
    # The creator of a vhost may use it at once, as in RabbitMQ.
    assert store.commands[1]["user"] == "guest"


def test_metadata_unavailable_is_503_and_nothing_changes(
    managed: ManagedNode, store: FakeSharedStore
) -> None:
    store.failure = MetadataUnavailable("no quorum: 1 of 3 nodes reachable")
    answer = managed.api.request("PUT", "/api/queues/%2F/unsure", {"durable": True})
    assert answer.status == 503
    assert answer.json() == {
        "error": "unavailable",
        "reason": "no quorum: 1 of 3 nodes reachable",
    }
    assert store.ops() == ["declare_queue"]
    store.failure = None
    assert managed.api.request("GET", "/api/queues/%2F/unsure").status == 404


def test_an_unexpected_error_while_awaiting_is_500_and_logged(
    managed: ManagedNode, store: FakeSharedStore, caplog: pytest.LogCaptureFixture
) -> None:
    store.failure = RuntimeError("the store broke")
    with caplog.at_level(logging.ERROR, logger="leveret.mgmt.server"):
        answer = managed.api.request("PUT", "/api/exchanges/%2F/broken", {"type": "fanout"})
    assert answer.status == 500
    assert answer.json() == {"error": "internal_error", "reason": "see the node's log"}
    failures = [r for r in caplog.records if "PUT /api/exchanges/%2F/broken" in r.getMessage()]
    assert failures and failures[0].exc_info is not None


def test_put_queue_submits_declare_queue_with_home_node_and_encoded_arguments(
    managed: ManagedNode, store: FakeSharedStore
) -> None:
    arguments = {"x-message-ttl": 60000, "x-dead-letter-exchange": "dlx", "x-note": {"a": 1}}
    answer = managed.api.request(
        "PUT", "/api/queues/%2F/shared.q", {"durable": True, "arguments": arguments}
    )
    assert answer.status == 201
    expected = {
        "op": "declare_queue",
        "vhost": "/",
        "name": "shared.q",
        "durable": True,
        "auto_delete": False,
        "exclusive_owner": None,
        "arguments": {
            "x-message-ttl": 60000,
            "x-dead-letter-exchange": "dlx",
            "x-note": {"$table": {"a": 1}},
        },
        "argument_types": {},
        "home_node": "fake-home-node",
    }
    (command,) = store.commands
    assert {key: command.get(key) for key in expected} == expected
    # An equivalent redeclaration changes nothing, so nothing is submitted.
    again = managed.api.request(
        "PUT", "/api/queues/%2F/shared.q", {"durable": True, "arguments": arguments}
    )
    assert again.status == 204
    assert len(store.commands) == 1


def test_a_refused_declaration_is_not_submitted(
    managed: ManagedNode, store: FakeSharedStore
) -> None:
    answer = managed.api.request(
        "PUT", "/api/queues/%2F/bad.q", {"arguments": {"x-max-priority": -1}}
    )
    assert answer.status == 400
    assert answer.json()["error"] == "bad_request"
    assert store.commands == []


def test_a_declaration_that_lost_a_race_is_checked_against_the_winner(
    managed: ManagedNode, store: FakeSharedStore
) -> None:
    # Another node declared the queue durable first; this node did not know it yet.
    winner = {
        "vhost": "/",
        "name": "raced",
        "durable": True,
        "auto_delete": False,
        "exclusive_owner": None,
        "arguments": {},
        "argument_types": {},
        "home_node": "other",
    }
    store.outcomes.append({"status": "conflict", "field": "durable", "queue": winner})
    answer = managed.api.request("PUT", "/api/queues/%2F/raced", {"durable": False})
    assert answer.status == 400
    assert answer.json() == {
        "error": "bad_request",
        "reason": "inequivalent arg 'durable' for queue 'raced' in vhost '/': "
        "received 'false' but current is 'true'",
    }
    # The store compares every argument; only some make a redeclaration inequivalent.
    store.outcomes.append(
        {"status": "conflict", "field": "arguments", "queue": {**winner, "arguments": {"x-a": 1}}}
    )
    assert managed.api.request("PUT", "/api/queues/%2F/raced", {"durable": True}).status == 204


def test_writes_submit_commands_and_leave_the_model_alone(
    managed: ManagedNode, store: FakeSharedStore
) -> None:
    api = managed.api
    policy = {"pattern": "^ha", "definition": {"max-length": 10}, "priority": 2}
    assert api.request("PUT", "/api/policies/%2F/cap", policy).status == 201
    assert api.request("PUT", "/api/operator-policies/%2F/op-cap", policy).status == 201
    user_body = {"password": "s3cret", "tags": "management"}
    assert api.request("PUT", "/api/users/ann", user_body).status == 201
    upstream = {"value": {"uri": "amqp://upstream"}}
    assert api.request("PUT", "/api/parameters/federation-upstream/%2F/up", upstream).status == 201
    assert api.request("PUT", "/api/global-parameters/cluster_name", {"value": "c1"}).status == 201
    store.outcomes.append({"status": "not_found"})
    assert api.request("DELETE", "/api/policies/%2F/missing").status == 404
    assert store.ops() == [
        "set_policy",
        "set_operator_policy",
        "put_user",
        "set_parameter",
        "set_global_parameter",
        "clear_policy",
    ]
    assert store.commands[0] == {
        "op": "set_policy",
        "vhost": "/",
        "name": "cap",
        "pattern": "^ha",
        "apply_to": "all",
        "definition": {"max-length": 10},
        "priority": 2,
    }
    user = store.commands[2]
    assert user["tags"] == ["management"] and check_password("s3cret", user["password_hash"])

    def untouched() -> bool:
        broker = managed.broker
        registry = broker.registry
        return (
            not registry.policies("policy")
            and not registry.policies("operator_policy")
            and not registry.parameters()
            and "cluster_name" not in registry.global_parameters
            and "ann" not in broker.users
        )

    assert managed.node.call(untouched)


def test_definitions_import_goes_through_the_store_in_order(
    managed: ManagedNode, store: FakeSharedStore
) -> None:
    definitions = {
        "queues": [{"name": "imp.q", "vhost": "/", "durable": True, "arguments": {}}],
        "exchanges": [{"name": "imp.x", "vhost": "/", "type": "topic", "durable": True}],
        "bindings": [
            {
                "source": "imp.x",
                "vhost": "/",
                "destination": "imp.q",
                "destination_type": "queue",
                "routing_key": "a.#",
                "arguments": {},
            },
            # An end that does not exist: skipped, as a single node skips it.
            {
                "source": "imp.x",
                "vhost": "/",
                "destination": "nowhere",
                "destination_type": "queue",
                "routing_key": "",
                "arguments": {},
            },
        ],
        "policies": [
            {"name": "p", "vhost": "/", "pattern": ".*", "definition": {"message-ttl": 5}}
        ],
    }
    answer = managed.api.request("POST", "/api/definitions", definitions)
    assert answer.status == 204, answer.body
    assert store.ops() == ["set_policy", "declare_queue", "declare_exchange", "bind"]
    assert store.commands[1]["home_node"] == "fake-home-node"
    bindings = managed.api.get("/api/exchanges/%2F/imp.x/bindings/source")
    assert [(b["destination"], b["routing_key"]) for b in bindings] == [("imp.q", "a.#")]
