"""Who may do what over HTTP, and users, permissions and vhosts managed through the API."""

from __future__ import annotations

import pika.exceptions
import pytest

from leveret.mgmt.access import authenticate
from leveret.mgmt.errors import ApiError
from leveret.mgmt.state import AuthCounts
from tests.mgmt.conftest import ManagedNode, amqp_connection

TAGGED = {
    "admin": "administrator",
    "mon": "monitoring",
    "pm": "policymaker",
    "mgmt": "management",
    "none": "",
}


@pytest.fixture
def accounts(managed: ManagedNode) -> ManagedNode:
    for name, tags in TAGGED.items():
        managed.api.put(f"/api/users/{name}", {"password": "pw", "tags": tags})
    for name in ("pm", "mgmt"):
        managed.api.put(
            f"/api/permissions/%2F/{name}", {"configure": ".*", "write": ".*", "read": ".*"}
        )
    return managed


@pytest.mark.parametrize(
    ("user", "path", "status"),
    [
        ("none", "/api/overview", 401),
        ("mgmt", "/api/overview", 200),
        ("mgmt", "/api/queues/%2F", 200),
        ("mon", "/api/queues/%2F", 401),  # no permissions in the vhost
        ("admin", "/api/queues/%2F", 200),  # administrators need none
        ("mgmt", "/api/nodes", 401),
        ("mon", "/api/nodes", 200),
        ("mon", "/api/connections", 200),
        ("mon", "/api/users", 401),
        ("pm", "/api/users", 401),
        ("admin", "/api/users", 200),
        ("mgmt", "/api/definitions", 401),
        ("admin", "/api/definitions", 200),
        ("pm", "/api/policies/%2F", 200),
        ("mgmt", "/api/operator-policies", 401),
        ("pm", "/api/operator-policies", 200),
        ("mgmt", "/api/whoami", 200),
    ],
)
def test_tags_open_the_api_as_rabbitmq_does(
    accounts: ManagedNode, user: str, path: str, status: int
) -> None:
    assert accounts.api.request("GET", path, user=(user, "pw")).status == status


def test_policymakers_write_policies_and_management_users_do_not(accounts: ManagedNode) -> None:
    body = {"pattern": "^x", "definition": {"max-length": 1}}
    assert accounts.api.request("PUT", "/api/policies/%2F/p", body, user=("pm", "pw")).status == 201
    refused = accounts.api.request("PUT", "/api/policies/%2F/q", body, user=("mgmt", "pw"))
    assert refused.json() == {
        "error": "not_authorised",
        "reason": "User not authorised to access object",
    }
    assert (
        accounts.api.request("PUT", "/api/operator-policies/%2F/o", body, user=("pm", "pw")).status
        == 401
    )


def test_amqp_permissions_apply_to_declarations_over_http(accounts: ManagedNode) -> None:
    api = accounts.api
    # A pattern that matches the whole name (the broker matches permissions against whole names).
    api.put("/api/permissions/%2F/mgmt", {"configure": "^mine\\..*", "write": ".*", "read": ".*"})
    assert api.request("PUT", "/api/queues/%2F/mine.q", {}, user=("mgmt", "pw")).status == 201
    refused = api.request("PUT", "/api/queues/%2F/theirs", {}, user=("mgmt", "pw"))
    assert refused.status == 401
    assert (
        refused.json()["reason"] == "access to queue 'theirs' in vhost '/' refused for user 'mgmt'"
    )


def test_credentials_are_checked_and_counted(managed: ManagedNode) -> None:
    counts = AuthCounts()
    broker = managed.broker
    with pytest.raises(ApiError) as missing:
        authenticate(broker, "", "127.0.0.1", counts)
    assert (missing.value.status, missing.value.error) == (401, None)
    with pytest.raises(ApiError) as remote_guest:
        authenticate(broker, "Basic Z3Vlc3Q6Z3Vlc3Q=", "10.1.2.3", counts)
    assert remote_guest.value.reason == "User can only log in via localhost"
    with pytest.raises(ApiError) as garbled:
        authenticate(broker, "Basic !!!", "127.0.0.1", counts)
    assert garbled.value.status == 400
    assert authenticate(broker, "Basic Z3Vlc3Q6Z3Vlc3Q=", "127.0.0.1", counts).is_admin
    assert (counts.attempts, counts.succeeded, counts.failed) == (2, 1, 1)
    answer = managed.api.request("GET", "/api/overview", user=None)
    assert answer.headers["www-authenticate"] == 'Basic realm="RabbitMQ Management"'


def test_users_are_created_changed_and_deleted(managed: ManagedNode) -> None:
    api = managed.api
    assert (
        api.request(
            "PUT", "/api/users/carol", {"password": "one", "tags": "management,monitoring"}
        ).status
        == 201
    )
    assert api.get("/api/users/carol")["tags"] == ["management", "monitoring"]
    api.put("/api/permissions/%2F/carol", {"configure": ".*", "write": ".*", "read": ".*"})
    with amqp_connection(managed, "carol", "one"):
        pass
    assert (
        api.request("PUT", "/api/users/carol", {"password": "two", "tags": ["management"]}).status
        == 204
    )
    with (
        pytest.raises(pika.exceptions.ProbableAuthenticationError),
        amqp_connection(managed, "carol", "one"),
    ):
        pass
    with amqp_connection(managed, "carol", "two"):
        pass
    assert api.get("/api/whoami", user=("carol", "two")) == {
        "name": "carol",
        "tags": ["management"],
    }
    password_hash = api.get("/api/users/carol")["password_hash"]
    api.put("/api/users/dave", {"password_hash": password_hash, "tags": ""})
    assert api.get("/api/users/dave")["password_hash"] == password_hash
    assert [u["name"] for u in api.get("/api/users/without-permissions")] == ["dave"]
    assert api.request("DELETE", "/api/users/carol").status == 204
    assert api.get("/api/permissions") == [
        {"user": "guest", "vhost": "/", "configure": ".*", "write": ".*", "read": ".*"}
    ]
    assert api.request("POST", "/api/users/bulk-delete", {"users": ["dave"]}).status == 204
    assert [u["name"] for u in api.get("/api/users")] == ["guest"]


def test_vhosts_are_created_for_their_creator_and_deleted_with_their_contents(
    managed: ManagedNode,
) -> None:
    api = managed.api
    assert (
        api.request(
            "PUT", "/api/vhosts/shop", {"description": "the shop", "tags": "prod,eu"}
        ).status
        == 201
    )
    shown = api.get("/api/vhosts/shop")
    assert (shown["description"], shown["tags"], shown["metadata"]) == (
        "the shop",
        ["prod", "eu"],
        {"description": "the shop", "tags": ["prod", "eu"]},
    )
    assert api.get("/api/permissions/shop/guest")["configure"] == ".*"
    api.put("/api/policies/shop/p", {"pattern": ".", "definition": {"max-length": 1}})
    with amqp_connection(managed, vhost="shop") as connection:
        channel = connection.channel()
        channel.queue_declare("orders", durable=True)
        assert api.request("DELETE", "/api/vhosts/shop").status == 204
        with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as closed:
            channel.queue_declare("other")
        assert closed.value.reply_code == 320
    assert [v["name"] for v in api.get("/api/vhosts")] == ["/"]
    assert api.get("/api/policies") == []
    assert api.request("PUT", "/api/vhosts/shop", {}).status == 201
    assert api.get("/api/queues/shop") == []
