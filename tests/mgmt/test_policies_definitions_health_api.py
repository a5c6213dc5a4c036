"""Policies and parameters, definitions export and import, health checks and aliveness."""

from __future__ import annotations

import json

from leveret.mgmt import management_state
from leveret.policy_effects import follow_policies
from tests.mgmt.conftest import ManagedNode, amqp_connection, start_managed_node


def test_policies_and_operator_policies_are_stored_and_listed(managed: ManagedNode) -> None:
    api = managed.api
    body = {
        "pattern": "^q",
        "definition": {"max-length": 5, "federation-upstream-set": "all"},
        "priority": 2,
        "apply-to": "queues",
    }
    assert api.request("PUT", "/api/policies/%2F/p", body).status == 201
    assert api.request("PUT", "/api/policies/%2F/p", body).status == 204
    expected = {
        "vhost": "/",
        "name": "p",
        "pattern": "^q",
        "apply-to": "queues",
        "definition": {"max-length": 5, "federation-upstream-set": "all"},
        "priority": 2,
    }
    assert api.get("/api/policies/%2F/p") == expected
    assert api.get("/api/policies") == api.get("/api/policies/%2F") == [expected]
    api.put("/api/operator-policies/%2F/o", {"pattern": ".*", "definition": {"message-ttl": 1000}})
    assert [p["name"] for p in api.get("/api/operator-policies/%2F")] == ["o"]
    registry = management_state(managed.broker).registry
    chosen = managed.node.call(lambda: registry.effective_policy("policy", "/", "queue", "queue-1"))
    assert chosen is not None and chosen.name == "p"
    assert api.request("DELETE", "/api/policies/%2F/p").status == 204
    assert api.request("DELETE", "/api/policies/%2F/p").status == 404
    assert api.get("/api/policies") == []


def test_parameters_and_global_parameters(managed: ManagedNode) -> None:
    api = managed.api
    value = {"uri": "amqp://upstream", "prefetch-count": 100}
    assert (
        api.request("PUT", "/api/parameters/federation-upstream/%2F/up", {"value": value}).status
        == 201
    )
    expected = {"value": value, "vhost": "/", "component": "federation-upstream", "name": "up"}
    assert api.get("/api/parameters/federation-upstream/%2F/up") == expected
    assert (
        api.get("/api/parameters") == api.get("/api/parameters/federation-upstream") == [expected]
    )
    assert api.get("/api/parameters/federation-upstream/%2F") == [expected]
    assert api.request("DELETE", "/api/parameters/federation-upstream/%2F/up").status == 204
    cluster_id = api.get("/api/global-parameters/internal_cluster_id")["value"]
    assert cluster_id.startswith("leveret-cluster-id-")
    assert api.request("PUT", "/api/global-parameters/cluster_tag", {"value": "blue"}).status == 201
    assert {"name": "cluster_tag", "value": "blue"} in api.get("/api/global-parameters")


def _populate(managed: ManagedNode) -> None:
    api = managed.api
    api.put("/api/vhosts/shop", {})
    api.put("/api/users/eve", {"password": "pw", "tags": "management"})
    api.put("/api/permissions/shop/eve", {"configure": ".*", "write": "", "read": ".*"})
    api.put("/api/exchanges/shop/orders", {"type": "topic", "durable": True})
    api.put("/api/queues/shop/eu", {"durable": True, "arguments": {"x-max-length": 9}})
    api.request("POST", "/api/bindings/shop/e/orders/q/eu", {"routing_key": "eu.#"})
    api.put("/api/policies/shop/lim", {"pattern": "^eu$", "definition": {"max-length": 5}})
    api.put("/api/parameters/federation-upstream/shop/up", {"value": {"uri": "amqp://x"}})


def test_definitions_round_trip_to_another_node(managed: ManagedNode) -> None:
    _populate(managed)
    exported = managed.api.get("/api/definitions")
    assert {
        "rabbit_version",
        "users",
        "vhosts",
        "permissions",
        "policies",
        "queues",
        "exchanges",
        "bindings",
        "parameters",
        "global_parameters",
        "topic_permissions",
    } <= set(exported)
    assert {
        "name": "eu",
        "vhost": "shop",
        "durable": True,
        "auto_delete": False,
        "arguments": {"x-max-length": 9},
    } in exported["queues"]
    other = start_managed_node()
    try:
        assert other.api.request("POST", "/api/definitions", exported).status == 204
        again = other.api.get("/api/definitions")
        for key in (
            "vhosts",
            "permissions",
            "policies",
            "queues",
            "exchanges",
            "bindings",
            "parameters",
        ):
            assert sorted(map(json.dumps, again[key])) == sorted(map(json.dumps, exported[key])), (
                key
            )
        eve = next(u for u in again["users"] if u["name"] == "eve")
        assert (
            eve["password_hash"]
            == next(u for u in exported["users"] if u["name"] == "eve")["password_hash"]
        )
        with amqp_connection(other, vhost="shop") as connection:
            channel = connection.channel()
            channel.basic_publish("orders", "eu.de", b"x")
            assert channel.queue_declare("eu", passive=True).method.message_count == 1
    finally:
        other.stop()


def test_vhost_definitions_import_into_another_vhost(managed: ManagedNode) -> None:
    _populate(managed)
    exported = managed.api.get("/api/definitions/shop")
    assert "users" not in exported and "vhost" not in exported["queues"][0]
    managed.api.put("/api/vhosts/copy", {})
    assert managed.api.request("POST", "/api/definitions/copy", exported).status == 204
    assert [q["name"] for q in managed.api.get("/api/queues/copy")] == ["eu"]
    assert [b["routing_key"] for b in managed.api.get("/api/bindings/copy/e/orders/q/eu")] == [
        "eu.#"
    ]
    bad_policy = {
        "policies": [{"vhost": "/", "name": "x", "pattern": ".", "definition": {"bogus": 1}}]
    }
    refused = managed.api.request("POST", "/api/definitions", bad_policy)
    assert refused.status == 400 and refused.json()["reason"].endswith("(//x)")


def test_health_checks_follow_alarms_and_listeners(managed: ManagedNode) -> None:
    api = managed.api
    assert api.get("/api/health/checks/alarms") == {"status": "ok"}
    managed.node.call(lambda: managed.broker.set_alarm("memory", True))
    try:
        failed = api.request("GET", "/api/health/checks/local-alarms")
        assert failed.status == 503
        assert failed.json() == {
            "status": "failed",
            "reason": "There are alarms in effect on the node",
            "alarms": [{"node": "leveret@localhost", "resource": "memory"}],
        }
        assert api.request("GET", "/api/health/checks/alarms").status == 503
    finally:
        managed.node.call(lambda: managed.broker.set_alarm("memory", False))
    assert api.get(f"/api/health/checks/port-listener/{managed.amqp_port}") == {
        "status": "ok",
        "port": managed.amqp_port,
    }
    assert api.get(f"/api/health/checks/port-listener/{managed.mgmt_port}")["status"] == "ok"
    missing = api.request("GET", "/api/health/checks/port-listener/1")
    assert missing.status == 503 and managed.amqp_port in missing.json()["ports"]
    assert api.get("/api/health/checks/protocol-listener/amqp") == {
        "status": "ok",
        "protocol": "amqp",
    }
    assert api.request("GET", "/api/health/checks/protocol-listener/stomp").status == 503
    assert api.get("/api/health/checks/node-is-quorum-critical") == {
        "status": "ok",
        "reason": "single node cluster",
    }
    assert api.get("/api/health/checks/virtual-hosts") == {"status": "ok"}
    assert api.get("/api/health/checks/certificate-expiration/1/months") == {"status": "ok"}


def test_aliveness_publishes_and_fetches_a_message(managed: ManagedNode) -> None:
    assert managed.api.get("/api/aliveness-test/%2F") == {"status": "ok"}
    queue = managed.api.get("/api/queues/%2F/aliveness-test")
    assert (
        queue["messages"],
        queue["message_stats"]["publish"],
        queue["message_stats"]["ack"],
    ) == (0, 1, 1)
    assert managed.api.request("GET", "/api/aliveness-test/nowhere").status == 404


def test_overview_and_nodes_describe_this_node(managed: ManagedNode) -> None:
    api = managed.api
    with amqp_connection(managed) as connection:
        connection.channel().queue_declare("q")
        overview = api.get("/api/overview")
        assert overview["object_totals"] == {
            "channels": 1,
            "connections": 1,
            "consumers": 0,
            # A vhost's standard exchanges, amq.rabbitmq.trace among them, as in RabbitMQ.
            "exchanges": 7,
            "queues": 1,
        }
    assert overview["node"] == "leveret@localhost"
    assert overview["product_name"] == "Leveret" and overview["rabbitmq_version"] == "3.10.8"
    protocols = {listener["protocol"]: listener["port"] for listener in overview["listeners"]}
    assert protocols["amqp"] == managed.amqp_port and protocols["http"] == managed.mgmt_port
    assert api.get("/api/overview?columns=node,object_totals.queues") == {
        "node": "leveret@localhost",
        "object_totals": {"queues": 1},
    }
    (node,) = api.get("/api/nodes")
    assert node["name"] == "leveret@localhost" and node["running"] is True
    assert node["mem_used"] > 0 and node["mem_limit"] > 0 and node["disk_free"] > 0
    assert api.get("/api/nodes/leveret@localhost?memory=true")["memory"]["total"]["rss"] > 0
    assert api.request("GET", "/api/nodes/other@host").status == 404
    assert api.get("/api/cluster-name") == {"name": "leveret"}
    assert api.request("HEAD", "/api/overview").body == b""
    assert api.request("OPTIONS", "/api/queues").headers["allow"] == "HEAD, GET, OPTIONS"


def test_policy_effects_trim_queues_and_follow_changes(managed: ManagedNode) -> None:
    state = management_state(managed.broker)
    managed.node.call(lambda: follow_policies(managed.broker, state.registry))
    with amqp_connection(managed) as connection:
        channel = connection.channel()
        channel.queue_declare("capped")
        for number in range(5):
            channel.basic_publish("", "capped", b"%d" % number)
        channel.queue_declare("capped", passive=True)
        managed.api.put(
            "/api/policies/%2F/cap", {"pattern": "^capped$", "definition": {"max-length": 2}}
        )
        assert channel.queue_declare("capped", passive=True).method.message_count == 2
        queue = managed.broker.vhosts["/"].queues["capped"]
        assert (queue.policy, queue.settings.max_length) == ("cap", 2)
        managed.api.put(
            "/api/operator-policies/%2F/guard", {"pattern": ".*", "definition": {"max-length": 1}}
        )
        assert channel.queue_declare("capped", passive=True).method.message_count == 1
        managed.api.request("DELETE", "/api/operator-policies/%2F/guard")
        managed.api.request("DELETE", "/api/policies/%2F/cap")
        assert (queue.policy, queue.operator_policy, queue.settings.max_length) == (
            None,
            None,
            None,
        )
