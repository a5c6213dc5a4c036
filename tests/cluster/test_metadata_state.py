"""The replicated metadata store as a pure machine: each command's reply, effects and state."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cluster.metadata import COMMANDS, CommandError, MetadataState, decode_command, encode_command
from cluster.metadata.replies import Reply
from proto.metadata_schema import (
    AddVhost,
    Batch,
    Bind,
    DeclareQueue,
    DeleteExchange,
    DeleteQueue,
    Effect,
    GlobalParameterRecord,
    QueueCreated,
    QueueDeleted,
    QueueRecord,
    SetPolicy,
    Unreadable,
    VhostAdded,
)


def apply(state: MetadataState, body: Any) -> tuple[Reply, list[Effect]]:
    """Apply a command as its JSON arrives from the log (a malformed one is an error reply)."""
    try:
        command = decode_command(json.dumps(body).encode())
    except CommandError as error:
        return {"status": "error", "reason": str(error)}, []
    return state.apply(command)


def fresh() -> MetadataState:
    state = MetadataState()
    apply(state, {"op": "add_vhost", "name": "/"})
    return state


def declare(name: str = "q", **properties: Any) -> dict[str, Any]:
    return {"op": "declare_queue", "vhost": "/", "name": name, "home_node": "n1", **properties}


def status(state: MetadataState, command: dict[str, Any]) -> str:
    reply, _effects = apply(state, command)
    return str(reply["status"])


# -- virtual hosts, users, permissions -----------------------------------------------------


def test_a_new_vhost_gets_the_standard_exchanges() -> None:
    state = MetadataState()
    reply, effects = apply(state, {"op": "add_vhost", "name": "v"})
    assert reply["status"] == "created"
    assert effects == [VhostAdded(vhost="v")]
    names = {exchange.name for exchange in state.exchanges("v")}
    assert names == {
        "",
        "amq.direct",
        "amq.fanout",
        "amq.headers",
        "amq.match",
        "amq.topic",
        "amq.rabbitmq.trace",
    }
    assert state.exchange("v", "amq.rabbitmq.trace").internal is True  # type: ignore[union-attr]
    assert status(state, {"op": "add_vhost", "name": "v"}) == "exists"


def test_deleting_a_vhost_removes_everything_in_it() -> None:
    state = fresh()
    apply(state, {"op": "add_vhost", "name": "other"})
    apply(state, {"op": "put_user", "name": "u", "password_hash": "h"})
    apply(
        state,
        {
            "op": "set_permissions",
            "user": "u",
            "vhost": "/",
            "configure": ".*",
            "write": ".*",
            "read": ".*",
        },
    )
    apply(state, declare("q1"))
    apply(state, declare("q2"))
    apply(state, {"op": "declare_queue", "vhost": "other", "name": "keep", "home_node": "n1"})
    apply(state, {"op": "bind", "vhost": "/", "source": "amq.direct", "destination": "q1"})
    apply(
        state,
        {
            "op": "set_policy",
            "vhost": "/",
            "name": "p",
            "pattern": ".*",
            "definition": {"max-length": 1},
        },
    )
    apply(
        state,
        {
            "op": "set_parameter",
            "component": "federation-upstream",
            "vhost": "/",
            "name": "up",
            "value": {"uri": "amqp://x"},
        },
    )
    reply, effects = apply(state, {"op": "delete_vhost", "name": "/"})
    assert reply["status"] == "deleted"
    assert QueueDeleted(vhost="/", name="q1") in effects
    assert QueueDeleted(vhost="/", name="q2") in effects
    assert state.queues("/") == [] and state.exchanges("/") == [] and state.bindings("/") == []
    assert state.policies("/") == [] and state.parameters(vhost="/") == []
    assert state.permissions(vhost="/") == []
    assert [q.name for q in state.queues()] == ["keep"]
    assert status(state, {"op": "delete_vhost", "name": "/"}) == "not_found"


def test_users_and_their_permissions() -> None:
    state = fresh()
    grant = {
        "op": "set_permissions",
        "user": "u",
        "vhost": "/",
        "configure": "",
        "write": ".*",
        "read": ".*",
    }
    assert status(state, grant) == "error", "the user must exist"
    assert (
        status(state, {"op": "put_user", "name": "u", "password_hash": "h", "tags": ["b", "a"]})
        == "created"
    )
    assert state.user("u").tags == ("a", "b")  # type: ignore[union-attr]
    assert status(state, {"op": "put_user", "name": "u", "password_hash": "h2"}) == "updated"
    assert status(state, grant) == "ok"
    assert status(state, {**grant, "vhost": "missing"}) == "error"
    assert state.permissions(user="u")[0].write == ".*"
    assert status(state, {"op": "delete_user", "name": "u"}) == "deleted"
    assert state.permissions() == []
    assert status(state, {"op": "clear_permissions", "user": "u", "vhost": "/"}) == "not_found"


# -- queues --------------------------------------------------------------------------------


def test_the_first_declaration_of_a_name_wins_and_keeps_its_home_node() -> None:
    state = fresh()
    reply, effects = apply(state, declare(durable=True))
    assert reply["status"] == "created"
    assert effects == [QueueCreated(vhost="/", name="q")]
    reply, effects = apply(state, {**declare(durable=True), "home_node": "n2"})
    assert reply["status"] == "exists" and reply["queue"]["home_node"] == "n1"
    assert effects == []


@pytest.mark.parametrize(
    ("first", "second", "difference"),
    [
        ({"durable": True}, {"durable": False}, {"field": "durable"}),
        ({"auto_delete": False}, {"auto_delete": True}, {"field": "auto_delete"}),
        ({}, {"exclusive_owner": "conn-1"}, {"field": "exclusive"}),
        (
            {"exclusive_owner": "conn-1"},
            {"exclusive_owner": "conn-2"},
            {"field": "exclusive_owner"},
        ),
        (
            {"arguments": {"x-max-length": 10}},
            {"arguments": {"x-max-length": 11}},
            {"field": "arguments", "argument": "x-max-length"},
        ),
        (
            {"arguments": {"x-message-ttl": 5}},
            {"arguments": {}},
            {"field": "arguments", "argument": "x-message-ttl"},
        ),
    ],
)
def test_an_inequivalent_redeclaration_is_a_conflict(
    first: dict[str, Any], second: dict[str, Any], difference: dict[str, str]
) -> None:
    state = fresh()
    apply(state, declare(**first))
    reply, effects = apply(state, declare(**second))
    assert reply["status"] == "conflict"
    assert {key: reply[key] for key in difference} == difference
    assert effects == []
    assert state.queue("/", "q").arguments == first.get("arguments", {})  # type: ignore[union-attr]


def test_unknown_x_arguments_do_not_make_a_redeclaration_inequivalent() -> None:
    state = fresh()
    apply(state, declare(arguments={"x-custom": 1}))
    assert status(state, declare(arguments={"x-custom": 2})) == "exists"
    assert status(state, declare(arguments={"x-queue-type": "classic"})) == "exists"
    reply, _ = apply(state, declare(arguments={"x-queue-type": "quorum"}))
    assert (reply["status"], reply["argument"]) == ("conflict", "x-queue-type")


def test_a_queue_needs_an_existing_vhost_and_well_typed_fields() -> None:
    state = fresh()
    assert status(state, {**declare(), "vhost": "missing"}) == "error"
    assert status(state, declare(durable="yes")) == "error"
    assert status(state, {"op": "declare_queue", "vhost": "/", "name": "q"}) == "error"
    assert state.queues() == []


def test_deleting_a_queue_removes_its_bindings_and_empty_auto_delete_exchanges() -> None:
    state = fresh()
    apply(state, declare())
    apply(
        state,
        {
            "op": "declare_exchange",
            "vhost": "/",
            "name": "ad",
            "type": "fanout",
            "auto_delete": True,
        },
    )
    apply(state, {"op": "bind", "vhost": "/", "source": "ad", "destination": "q"})
    apply(
        state,
        {
            "op": "bind",
            "vhost": "/",
            "source": "amq.direct",
            "destination": "q",
            "routing_key": "k",
        },
    )
    reply, effects = apply(state, {"op": "delete_queue", "vhost": "/", "name": "q"})
    assert reply["status"] == "deleted"
    kinds = [type(effect).__name__ for effect in effects]
    assert kinds == ["QueueDeleted", "BindingDeleted", "BindingDeleted", "ExchangeDeleted"]
    assert state.bindings() == []
    assert state.exchange("/", "ad") is None
    assert state.exchange("/", "amq.direct") is not None
    assert status(state, {"op": "delete_queue", "vhost": "/", "name": "q"}) == "not_found"


def test_only_the_owner_deletes_an_exclusive_queue() -> None:
    state = fresh()
    apply(state, declare(exclusive_owner="conn-1"))
    assert status(state, {"op": "delete_queue", "vhost": "/", "name": "q"}) == "locked"
    assert (
        status(state, {"op": "delete_queue", "vhost": "/", "name": "q", "owner": "conn-1"})
        == "deleted"
    )


# -- exchanges and bindings ------------------------------------------------------------------


def test_exchange_declarations_and_conflicts() -> None:
    state = fresh()
    command = {"op": "declare_exchange", "vhost": "/", "name": "x", "type": "topic"}
    assert status(state, command) == "created"
    assert status(state, command) == "exists"
    reply, _ = apply(state, {**command, "type": "direct"})
    assert (reply["status"], reply["field"]) == ("conflict", "type")
    reply, _ = apply(state, {**command, "durable": False})
    assert (reply["status"], reply["field"]) == ("conflict", "durable")


def test_binding_needs_both_ends_and_is_idempotent() -> None:
    state = fresh()
    bind = {
        "op": "bind",
        "vhost": "/",
        "source": "amq.topic",
        "destination": "q",
        "routing_key": "a.#",
    }
    reply, _ = apply(state, bind)
    assert reply == {"status": "not_found", "missing": "destination"}
    apply(state, declare())
    assert status(state, bind) == "created"
    assert status(state, bind) == "exists"
    assert status(state, {**bind, "arguments": {"x-match": "all"}}) == "created"
    assert len(state.bindings("/")) == 2
    assert status(state, {**bind, "op": "unbind"}) == "deleted"
    assert status(state, {**bind, "op": "unbind"}) == "not_found"
    assert status(state, {**bind, "source": "nope"}) == "not_found"


def test_deleting_an_exchange_removes_bindings_on_both_sides() -> None:
    state = fresh()
    apply(state, {"op": "declare_exchange", "vhost": "/", "name": "x", "type": "fanout"})
    apply(state, declare())
    apply(state, {"op": "bind", "vhost": "/", "source": "x", "destination": "q"})
    apply(
        state,
        {
            "op": "bind",
            "vhost": "/",
            "source": "amq.fanout",
            "destination": "x",
            "destination_type": "exchange",
        },
    )
    in_use = {"op": "delete_exchange", "vhost": "/", "name": "x", "if_unused": True}
    assert status(state, in_use) == "in_use"
    reply, effects = apply(state, {"op": "delete_exchange", "vhost": "/", "name": "x"})
    assert reply["status"] == "deleted"
    assert [type(effect).__name__ for effect in effects].count("BindingDeleted") == 2
    assert state.bindings() == []


# -- policies, parameters, members -------------------------------------------------------


def test_policies_and_operator_policies_are_separate_tables() -> None:
    state = fresh()
    policy = {
        "op": "set_policy",
        "vhost": "/",
        "name": "p",
        "pattern": "^q",
        "definition": {"max-length": 5},
        "priority": 1,
        "apply_to": "queues",
    }
    assert status(state, policy) == "created"
    assert status(state, policy) == "updated"
    assert status(state, {**policy, "op": "set_operator_policy"}) == "created"
    assert status(state, {**policy, "pattern": "("}) == "error"
    assert status(state, {**policy, "apply_to": "everything"}) == "error"
    assert [p.name for p in state.policies("/")] == ["p"]
    assert [p.name for p in state.operator_policies("/")] == ["p"]
    assert status(state, {"op": "clear_policy", "vhost": "/", "name": "p"}) == "deleted"
    assert state.policies() == [] and len(state.operator_policies()) == 1


def test_parameters_global_parameters_and_members() -> None:
    state = fresh()
    param = {
        "op": "set_parameter",
        "component": "federation-upstream",
        "vhost": "/",
        "name": "up",
        "value": {"uri": "amqp://up"},
    }
    assert status(state, param) == "created"
    assert state.parameters("federation-upstream")[0].value == {"uri": "amqp://up"}
    assert status(state, {**param, "op": "clear_parameter"}) == "deleted"
    assert (
        status(state, {"op": "set_global_parameter", "name": "cluster_name", "value": "c1"})
        == "created"
    )
    assert state.global_parameter("cluster_name") == GlobalParameterRecord(
        name="cluster_name", value="c1"
    )
    member = {"op": "add_member", "name": "n2", "address": "127.0.0.1:25673"}
    assert status(state, member) == "created"
    assert status(state, member) == "exists"
    assert status(state, {**member, "address": "127.0.0.1:25674"}) == "updated"
    assert status(state, {"op": "remove_member", "name": "n2"}) == "deleted"
    assert state.members() == []


# -- robustness, snapshots, determinism --------------------------------------------------------


def test_unknown_and_malformed_commands_get_an_error_reply() -> None:
    state = fresh()
    before = state.snapshot()
    for command in (
        {"op": "drop_everything"},
        {},
        {"op": 3},
        {"op": "declare_queue", "vhost": 1},
        {"op": "batch", "commands": [{"op": "add_vhost"}]},
    ):
        reply, effects = apply(state, command)
        assert reply["status"] in ("error", "ok") and effects == []
    assert state.snapshot() == before
    # What JSON cannot carry never reaches the log.
    with pytest.raises(TypeError):
        encode_command(AddVhost(name=b"/"))  # type: ignore[arg-type]


def test_replies_are_copies_the_caller_may_change() -> None:
    state = fresh()
    reply, _effects = apply(state, declare(arguments={"x-max-length": 1}))
    reply["queue"]["arguments"]["x-max-length"] = 99
    assert state.queue("/", "q") == QueueRecord(
        vhost="/", name="q", arguments={"x-max-length": 1}, home_node="n1"
    )


def test_commands_travel_as_canonical_json() -> None:
    declare = DeclareQueue(vhost="/", name="q", exclusive_owner=None, home_node="n1")
    assert encode_command(declare) == (
        b'{"argument_types":{},"arguments":{},"auto_delete":false,"durable":false,'
        b'"exclusive_owner":null,"home_node":"n1","home_run":"","name":"q",'
        b'"op":"declare_queue","vhost":"/"}'
    )
    assert decode_command(encode_command(declare)) == declare
    # Fields left to the store's default are left out, as the commands' makers always did.
    assert encode_command(AddVhost(name="v")) == b'{"name":"v","op":"add_vhost"}'
    assert encode_command(DeleteQueue(vhost="/", name="q")) == (
        b'{"name":"q","op":"delete_queue","vhost":"/"}'
    )
    assert encode_command(DeleteExchange(vhost="/", name="x", if_unused=False)) == (
        b'{"if_unused":false,"name":"x","op":"delete_exchange","vhost":"/"}'
    )
    for bad, reason in (
        (b"[1]", "a command must be a JSON object"),
        (b'{"op":"x"}', "unknown command 'x'"),
        (b'{"op":"add_vhost"}', "missing field 'name'"),
        (b'{"op":"declare_queue","vhost":"/","name":"q","home_node":"n","durable":1}', None),
        (b'{"op":"bind","vhost":"/","source":"s","destination":"d","destination_type":"x"}', None),
        (b"not json", None),
        (b"\xff", None),
    ):
        with pytest.raises(CommandError) as raised:
            decode_command(bad)
        assert reason is None or str(raised.value) == reason


def test_a_batch_item_that_does_not_decode_fails_alone() -> None:
    data = b'{"commands":[{"name":"v","op":"add_vhost"},{"op":"nope"}],"op":"batch"}'
    command = decode_command(data)
    assert command == Batch(
        commands=(
            AddVhost(name="v"),
            Unreadable(body={"op": "nope"}, reason="unknown command 'nope'"),
        )
    )
    assert encode_command(command) == data
    reply, effects = MetadataState().apply(command)
    assert reply == {"status": "ok", "statuses": ["created", "error"]}
    assert effects == [VhostAdded(vhost="v")]


def test_typed_commands_apply_as_their_json_does() -> None:
    state = fresh()
    state.apply(DeclareQueue(vhost="/", name="q", exclusive_owner=None, home_node="n1"))
    reply, _ = state.apply(Bind(vhost="/", source="amq.direct", destination="q", routing_key="k"))
    assert reply["status"] == "created"
    assert [binding.destination_type for binding in state.bindings()] == ["queue"]
    reply, _ = state.apply(
        SetPolicy(vhost="/", name="p", pattern="(", definition={"max-length": 1})
    )
    assert reply["status"] == "error" and "invalid pattern" in reply["reason"]


_names = st.sampled_from(["a", "b", "c"])
_values = st.one_of(st.booleans(), st.integers(-3, 3), st.sampled_from(["", "x", ".*"]), st.none())
_commands = st.fixed_dictionaries(
    {"op": st.sampled_from(COMMANDS)},
    optional={
        "vhost": st.sampled_from(["/", "v"]),
        "name": _names,
        "user": _names,
        "source": st.sampled_from(["amq.direct", "a", "b"]),
        "destination": _names,
        "destination_type": st.sampled_from(["queue", "exchange", "bogus"]),
        "type": st.sampled_from(["direct", "fanout"]),
        "durable": _values,
        "auto_delete": _values,
        "home_node": st.sampled_from(["n1", "n2"]),
        "exclusive_owner": st.sampled_from([None, "c1"]),
        "arguments": st.dictionaries(st.sampled_from(["x-max-length", "x-other"]), _values),
        "pattern": st.sampled_from([".*", "^a", "("]),
        "definition": st.just({"max-length": 1}),
        "component": st.just("federation-upstream"),
        "value": _values,
        "address": st.sampled_from(["h:1", "h:2"]),
        "configure": st.just(".*"),
        "write": st.just(".*"),
        "read": st.just(".*"),
        "password_hash": st.just("h"),
        "if_unused": _values,
        "owner": st.sampled_from([None, "c1"]),
    },
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_commands, max_size=30))
def test_any_command_sequence_is_deterministic_and_survives_snapshot_restore(
    commands: list[dict[str, Any]],
) -> None:
    first, second = fresh(), fresh()
    for command in commands:
        reply, effects = apply(first, command)
        assert isinstance(reply["status"], str)
        assert (reply, effects) == apply(second, command)
        restored = MetadataState.restore(first.snapshot())
        assert restored.snapshot() == first.snapshot()
    assert first.snapshot() == second.snapshot()
