"""One scenario run against any broker with a management API: the same objects, then the answers.

`build_state` creates users, a vhost, policies, exchanges, queues, messages and a consumer;
`capture` asks the API for every object and for a list of refusals, and returns the shapes of
the answers (field names and value types, not values) and the status and body of each refusal.
Run against RabbitMQ it produces the committed golden fixture; run against Leveret it produces
what the golden tests compare with it.
"""

from __future__ import annotations

import base64
import html
import http.client
import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import pika

PASSWORD = "golden-pw"
USERS = {
    "golden-mon": "monitoring",
    "golden-mgmt": "management",
    "golden-pm": "policymaker",
    "golden-plain": "",
}
GOLDEN_VHOST = "golden-vh"
Q1, Q2, EXCHANGE, CONSUMER_TAG = "golden.q1", "golden.q2", "golden.ex", "golden-ctag"
GUEST = ("guest", "guest")


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


class Api:
    """A tiny HTTP client for a management listener."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        user: tuple[str, str] | None = GUEST,
        headers: dict[str, str] | None = None,
        raw: bytes | None = None,
    ) -> Answer:
        sent = dict(headers or {})
        if user is not None:
            token = base64.b64encode(f"{user[0]}:{user[1]}".encode()).decode()
            sent["Authorization"] = f"Basic {token}"
        data = raw
        if body is not None:
            data = json.dumps(body).encode()
            sent.setdefault("Content-Type", "application/json")
        connection = http.client.HTTPConnection(self.host, self.port, timeout=30)
        try:
            connection.request(method, path, body=data, headers=sent)
            response = connection.getresponse()
            payload = response.read()
            return Answer(
                response.status, {k.lower(): v for k, v in response.getheaders()}, payload
            )
        finally:
            connection.close()

    def get(self, path: str, user: tuple[str, str] | None = GUEST) -> Any:
        answer = self.request("GET", path, user=user)
        assert answer.status == 200, (path, answer.status, answer.body[:500])
        return answer.json()

    def put(self, path: str, body: Any, user: tuple[str, str] | None = GUEST) -> Answer:
        answer = self.request("PUT", path, body, user=user)
        assert answer.status in (201, 204), (path, answer.status, answer.body[:500])
        return answer


def wait_until(predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout}s")
        time.sleep(0.2)


# --- building the state ------------------------------------------------------------------------


@dataclass
class Clients:
    """The AMQP connection that holds a consumer open while the API is asked."""

    connection: pika.BlockingConnection
    consumer_channel: Any

    def close(self) -> None:
        if self.connection.is_open:
            self.connection.close()


def build_state(api: Api, amqp_port: int) -> Clients:
    for name, tags in USERS.items():
        api.put(f"/api/users/{name}", {"password": PASSWORD, "tags": tags})
    for name in ("golden-mgmt", "golden-pm"):
        api.put(f"/api/permissions/%2F/{name}", {"configure": ".*", "write": ".*", "read": ".*"})
    api.put(f"/api/vhosts/{GOLDEN_VHOST}", {"description": "golden vhost", "tags": "a,b"})
    api.put(
        "/api/policies/%2F/golden-p",
        {
            "pattern": r"^golden\.q1$",
            "definition": {"max-length": 50},
            "priority": 1,
            "apply-to": "queues",
        },
    )
    api.put(
        "/api/operator-policies/%2F/golden-op",
        {"pattern": r"^golden\.", "definition": {"max-length": 1000}, "apply-to": "queues"},
    )
    api.put(
        "/api/parameters/federation-upstream/%2F/golden-up", {"value": {"uri": "amqp://localhost"}}
    )
    params = pika.ConnectionParameters(
        "127.0.0.1", amqp_port, credentials=pika.PlainCredentials(*GUEST), heartbeat=0
    )
    connection = pika.BlockingConnection(params)
    channel = connection.channel()
    channel.exchange_declare(EXCHANGE, "topic", durable=True)
    channel.queue_declare(Q1, durable=True, arguments={"x-max-length": 100})
    channel.queue_bind(Q1, EXCHANGE, "a.#")
    for number in range(3):
        channel.basic_publish(
            EXCHANGE, "a.b", b"persistent-%d" % number, pika.BasicProperties(delivery_mode=2)
        )
    channel.queue_declare(Q2)
    for _ in range(5):
        channel.basic_publish("", Q2, b"x" * 10)
    consumer_channel = connection.channel()
    consumer_channel.basic_qos(prefetch_count=2)
    consumer_channel.basic_consume(Q2, lambda *args: None, consumer_tag=CONSUMER_TAG)
    connection.process_data_events(0.5)
    clients = Clients(connection, consumer_channel)
    wait_for_statistics(api)
    return clients


def wait_for_statistics(api: Api) -> None:
    """RabbitMQ publishes statistics every few seconds: wait until they show the scenario."""

    def settled() -> bool:
        q1 = api.get(f"/api/queues/%2F/{Q1}")
        q2 = api.get(f"/api/queues/%2F/{Q2}")
        connections = api.get("/api/connections")
        channels = api.get("/api/channels")
        return (
            q1.get("messages") == 3
            and q1.get("message_stats", {}).get("publish") == 3
            and q1.get("policy") == "golden-p"
            and q2.get("messages_unacknowledged") == 2
            and "deliver_get" in q2.get("message_stats", {})
            and len(connections) == 1
            and "channels" in connections[0]
            and len(channels) == 2
            and all("messages_unacknowledged" in c for c in channels)
        )

    wait_until(settled, 60, "statistics for the golden scenario")


# --- shapes -----------------------------------------------------------------------------------


def shape(value: Any) -> Any:
    """Field names and value types: objects keep their keys, lists merge their items' shapes."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    if isinstance(value, list):
        merged: Any = None
        for item in value:
            merged = merge(merged, shape(item))
        return [] if merged is None else [merged]
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return "string"


def merge(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if isinstance(a, dict) and isinstance(b, dict):
        merged = dict(a)
        for key, value in b.items():
            merged[key] = merge(merged.get(key), value)
        return merged
    if isinstance(a, list) and isinstance(b, list):
        if not a or not b:
            return a or b
        return [merge(a[0], b[0])]
    if a == "null":
        return b
    if b == "null" or a == b:
        return a
    return "mixed"


def _pick(items: list[dict[str, Any]], **wanted: Any) -> dict[str, Any]:
    for item in items:
        if all(item.get(key) == value for key, value in wanted.items()):
            return item
    raise AssertionError(f"no item with {wanted} among {len(items)}")


@dataclass
class Capture:
    shapes: dict[str, Any] = field(default_factory=dict)
    refusals: dict[str, dict[str, Any]] = field(default_factory=dict)


def capture(api: Api) -> Capture:
    """Every object's answer shape, then every refusal's status and body."""
    result = Capture()
    shapes = result.shapes
    mon = ("golden-mon", PASSWORD)
    mgmt = ("golden-mgmt", PASSWORD)

    shapes["overview"] = shape(api.get("/api/overview"))
    shapes["overview.management_user"] = shape(api.get("/api/overview", user=mgmt))
    nodes = api.get("/api/nodes")
    node = nodes[0]["name"]
    shapes["nodes.item"] = shape(nodes[0])
    shapes["node"] = shape(api.get(f"/api/nodes/{quote(node, safe='')}"))
    queues = api.get("/api/queues")
    shapes["queues.item.published"] = shape(_pick(queues, name=Q1))
    shapes["queues.item.consumed"] = shape(_pick(queues, name=Q2))
    shapes["queue"] = shape(api.get(f"/api/queues/%2F/{Q2}"))
    shapes["queues.disable_stats.item"] = shape(
        _pick(api.get("/api/queues/%2F?disable_stats=true"), name=Q1)
    )
    shapes["queues.paged"] = shape(api.get("/api/queues?page=1&page_size=1&columns=name"))
    shapes["queues.columns"] = shape(
        api.get("/api/queues/%2F?columns=name,messages,message_stats.publish")
    )
    shapes["queue.bindings"] = shape(api.get(f"/api/queues/%2F/{Q1}/bindings"))
    shapes["exchanges.item"] = shape(_pick(api.get("/api/exchanges"), name=EXCHANGE))
    shapes["exchange"] = shape(api.get(f"/api/exchanges/%2F/{EXCHANGE}"))
    shapes["exchange.default"] = shape(api.get("/api/exchanges/%2F/amq.default"))
    shapes["exchange.bindings.source"] = shape(
        api.get(f"/api/exchanges/%2F/{EXCHANGE}/bindings/source")
    )
    shapes["bindings"] = shape(api.get("/api/bindings/%2F"))
    binding = _pick(api.get(f"/api/bindings/%2F/e/{EXCHANGE}/q/{Q1}"), routing_key="a.#")
    shapes["binding"] = shape(
        api.get(
            f"/api/bindings/%2F/e/{EXCHANGE}/q/{Q1}/{quote(binding['properties_key'], safe='~')}"
        )
    )
    connections = api.get("/api/connections")
    connection = connections[0]["name"]
    shapes["connections.item"] = shape(connections[0])
    shapes["connection"] = shape(api.get(f"/api/connections/{quote(connection, safe='')}"))
    shapes["connection.channels"] = shape(
        api.get(f"/api/connections/{quote(connection, safe='')}/channels")
    )
    channels = api.get("/api/channels")
    consuming = _pick(channels, consumer_count=1)
    shapes["channels.item"] = shape(consuming)
    shapes["channel"] = shape(api.get(f"/api/channels/{quote(consuming['name'], safe='')}"))
    shapes["consumers.item"] = shape(api.get("/api/consumers")[0])
    shapes["consumers.vhost"] = shape(api.get("/api/consumers/%2F"))
    shapes["vhosts.item"] = shape(_pick(api.get("/api/vhosts"), name="/"))
    shapes["vhost"] = shape(api.get(f"/api/vhosts/{GOLDEN_VHOST}"))
    shapes["vhost.permissions"] = shape(api.get("/api/vhosts/%2F/permissions"))
    shapes["users.item"] = shape(_pick(api.get("/api/users"), name="guest"))
    shapes["user"] = shape(api.get("/api/users/golden-mon"))
    shapes["users.without_permissions"] = shape(api.get("/api/users/without-permissions"))
    shapes["whoami"] = shape(api.get("/api/whoami"))
    shapes["whoami.monitoring"] = shape(api.get("/api/whoami", user=mon))
    shapes["permissions"] = shape(api.get("/api/permissions"))
    shapes["permission"] = shape(api.get("/api/permissions/%2F/guest"))
    shapes["user.permissions"] = shape(api.get("/api/users/guest/permissions"))
    shapes["policies"] = shape(api.get("/api/policies"))
    shapes["policy"] = shape(api.get("/api/policies/%2F/golden-p"))
    shapes["operator_policies"] = shape(api.get("/api/operator-policies"))
    shapes["parameters"] = shape(api.get("/api/parameters"))
    shapes["parameter"] = shape(api.get("/api/parameters/federation-upstream/%2F/golden-up"))
    shapes["global_parameters"] = shape(api.get("/api/global-parameters"))
    shapes["definitions"] = shape(api.get("/api/definitions"))
    shapes["definitions.vhost"] = shape(api.get("/api/definitions/%2F"))
    shapes["cluster_name"] = shape(api.get("/api/cluster-name"))
    get = api.request(
        "POST",
        f"/api/queues/%2F/{Q1}/get",
        {"count": 1, "ackmode": "ack_requeue_true", "encoding": "auto"},
    )
    shapes["queue.get"] = shape(get.json())
    port = next(
        listener["port"]
        for listener in api.get("/api/overview")["listeners"]
        if listener["protocol"] == "amqp"
    )
    shapes["health.port_listener"] = shape(api.get(f"/api/health/checks/port-listener/{port}"))
    for check in (
        "alarms",
        "local-alarms",
        "virtual-hosts",
        "node-is-quorum-critical",
        "node-is-mirror-sync-critical",
    ):
        shapes[f"health.{check}"] = api.get(f"/api/health/checks/{check}")
    shapes["aliveness"] = api.get("/api/aliveness-test/%2F")
    result.refusals = {
        name: _answer(api, request) for name, request in refusal_requests(node, port)
    }
    return result


# --- refusals ---------------------------------------------------------------------------------

LONG_NAME = "a" * 256


def refusal_requests(node: str, amqp_port: int) -> Iterator[tuple[str, dict[str, Any]]]:
    """Requests RabbitMQ refuses (or answers specially), each with the user making it."""
    mgmt = ("golden-mgmt", PASSWORD)
    mon = ("golden-mon", PASSWORD)
    pm = ("golden-pm", PASSWORD)
    plain = ("golden-plain", PASSWORD)

    def req(
        method: str, path: str, body: Any = None, user: tuple[str, str] | None = GUEST
    ) -> dict[str, Any]:
        return {"method": method, "path": path, "body": body, "user": user}

    yield "no_credentials", req("GET", "/api/overview", user=None)
    yield "wrong_password", req("GET", "/api/overview", user=("guest", "nope"))
    yield "unknown_user", req("GET", "/api/overview", user=("nobody", "nope"))
    yield "no_management_tag", req("GET", "/api/overview", user=plain)
    yield "management_lists_users", req("GET", "/api/users", user=mgmt)
    yield "monitoring_lists_users", req("GET", "/api/users", user=mon)
    yield "management_lists_nodes", req("GET", "/api/nodes", user=mgmt)
    yield "monitoring_reads_definitions", req("GET", "/api/definitions", user=mon)
    yield "monitoring_vhost_without_permissions", req("GET", "/api/queues/%2F", user=mon)
    yield "management_other_vhost", req("GET", f"/api/queues/{GOLDEN_VHOST}", user=mgmt)
    yield "management_creates_vhost", req("PUT", "/api/vhosts/golden-nope", {}, user=mgmt)
    yield (
        "management_sets_policy",
        req(
            "PUT",
            "/api/policies/%2F/golden-x",
            {"pattern": "^x", "definition": {"max-length": 1}},
            user=mgmt,
        ),
    )
    yield "policymaker_lists_policies", req("GET", "/api/policies", user=pm)
    yield "management_lists_queues", req("GET", "/api/queues?columns=name", user=mgmt)
    yield "monitoring_whoami", req("GET", "/api/whoami", user=mon)
    yield "unknown_path", req("GET", "/api/nonsense")
    yield "queue_missing", req("GET", "/api/queues/%2F/golden.missing")
    yield "queue_in_missing_vhost", req("GET", "/api/queues/golden-missing-vh/q")
    yield "queues_of_missing_vhost", req("GET", "/api/queues/golden-missing-vh")
    yield "queue_post_not_allowed", req("POST", f"/api/queues/%2F/{Q1}", {})
    yield "overview_put_not_allowed", req("PUT", "/api/overview", {})
    yield "queue_name_too_long", req("PUT", f"/api/queues/%2F/{LONG_NAME}", {})
    yield "queue_name_255_bytes", req("PUT", f"/api/queues/%2F/{LONG_NAME[:255]}", {})
    yield (
        "queue_redeclare_same",
        req("PUT", f"/api/queues/%2F/{Q1}", {"durable": True, "arguments": {"x-max-length": 100}}),
    )
    yield "queue_inequivalent_durable", req("PUT", f"/api/queues/%2F/{Q1}", {"durable": False})
    yield "queue_bad_json", req("PUT", "/api/queues/%2F/golden.bad", None) | {"raw": b'{"durable":'}
    yield (
        "queue_priority_too_high",
        req("PUT", "/api/queues/%2F/golden.pq", {"arguments": {"x-max-priority": 1000}}),
    )
    yield "queue_delete_if_unused", req("DELETE", f"/api/queues/%2F/{Q2}?if-unused=true")
    yield "queue_delete_if_empty", req("DELETE", f"/api/queues/%2F/{Q1}?if-empty=true")
    yield "queue_delete_missing", req("DELETE", "/api/queues/%2F/golden.missing")
    yield "queue_get_missing_keys", req("POST", f"/api/queues/%2F/{Q1}/get", {"count": 1})
    yield "exchange_missing", req("GET", "/api/exchanges/%2F/golden.missing")
    yield "exchange_unknown_type", req("PUT", "/api/exchanges/%2F/golden.bx", {"type": "bogus"})
    yield "exchange_reserved_name", req("PUT", "/api/exchanges/%2F/amq.golden", {"type": "direct"})
    yield "exchange_delete_system", req("DELETE", "/api/exchanges/%2F/amq.direct")
    yield (
        "exchange_delete_if_unused",
        req("DELETE", f"/api/exchanges/%2F/{EXCHANGE}?if-unused=true"),
    )
    yield "exchange_inequivalent", req("PUT", f"/api/exchanges/%2F/{EXCHANGE}", {"type": "topic"})
    yield (
        "publish_routed",
        req(
            "POST",
            f"/api/exchanges/%2F/{EXCHANGE}/publish",
            {"properties": {}, "routing_key": "a.c", "payload": "hi", "payload_encoding": "string"},
        ),
    )
    yield (
        "publish_unroutable",
        req(
            "POST",
            f"/api/exchanges/%2F/{EXCHANGE}/publish",
            {"properties": {}, "routing_key": "zz", "payload": "hi", "payload_encoding": "string"},
        ),
    )
    yield (
        "publish_missing_exchange",
        req(
            "POST",
            "/api/exchanges/%2F/golden.missing/publish",
            {"properties": {}, "routing_key": "zz", "payload": "hi", "payload_encoding": "string"},
        ),
    )
    yield (
        "publish_missing_keys",
        req("POST", f"/api/exchanges/%2F/{EXCHANGE}/publish", {"routing_key": "zz"}),
    )
    yield (
        "bind_missing_exchange",
        req("POST", f"/api/bindings/%2F/e/golden.missing/q/{Q1}", {"routing_key": "k"}),
    )
    yield (
        "bind_missing_queue",
        req("POST", f"/api/bindings/%2F/e/{EXCHANGE}/q/golden.missing", {"routing_key": "k"}),
    )
    yield (
        "bind_default_exchange",
        req("POST", f"/api/bindings/%2F/e/amq.default/q/{Q1}", {"routing_key": "k"}),
    )
    yield "binding_missing", req("GET", f"/api/bindings/%2F/e/{EXCHANGE}/q/{Q1}/nope")
    yield "unbind_default_exchange", req("DELETE", f"/api/bindings/%2F/e/amq.default/q/{Q1}/{Q1}")
    # Deleting what is not there, and purging or reading a missing queue.
    yield "exchange_delete_missing", req("DELETE", "/api/exchanges/%2F/golden.missing")
    yield "queue_delete_missing_vhost", req("DELETE", "/api/queues/golden-missing-vh/q")
    yield "queue_purge_missing", req("DELETE", "/api/queues/%2F/golden.missing/contents")
    yield (
        "queue_get_missing",
        req(
            "POST",
            "/api/queues/%2F/golden.missing/get",
            {"count": 1, "ackmode": "ack_requeue_true", "encoding": "auto"},
        ),
    )
    yield "unbind_missing_binding", req("DELETE", f"/api/bindings/%2F/e/{EXCHANGE}/q/{Q1}/nope")
    yield (
        "unbind_missing_queue",
        req("DELETE", f"/api/bindings/%2F/e/{EXCHANGE}/q/golden.missing/k"),
    )
    yield "unbind_missing_exchange", req("DELETE", f"/api/bindings/%2F/e/golden.missing/q/{Q1}/k")
    yield (
        "unbind_missing_destination_exchange",
        req("DELETE", f"/api/bindings/%2F/e/{EXCHANGE}/e/golden.missing/k"),
    )
    yield "user_without_tags", req("PUT", "/api/users/golden-notags", {"password": "x"})
    yield (
        "user_password_and_hash",
        req("PUT", "/api/users/golden-both", {"password": "x", "password_hash": "x", "tags": ""}),
    )
    yield "user_missing", req("GET", "/api/users/golden-missing")
    yield "user_delete_missing", req("DELETE", "/api/users/golden-missing")
    yield (
        "permission_unknown_user",
        req(
            "PUT",
            "/api/permissions/%2F/golden-missing",
            {"configure": ".*", "write": ".*", "read": ".*"},
        ),
    )
    yield (
        "permission_missing_keys",
        req("PUT", "/api/permissions/%2F/golden-mon", {"configure": ".*"}),
    )
    yield "permission_missing", req("GET", "/api/permissions/%2F/golden-mon")
    yield "vhost_missing", req("GET", "/api/vhosts/golden-missing")
    yield "vhost_delete_missing", req("DELETE", "/api/vhosts/golden-missing")
    for name, definition in (
        ("policy_max_priority", {"max-priority": 5}),
        ("policy_bad_max_length", {"max-length": "x"}),
        ("policy_negative_max_length", {"max-length": -1}),
        ("policy_empty", {}),
        ("policy_bad_overflow", {"overflow": "bogus"}),
        ("policy_bad_ttl", {"message-ttl": -5}),
        ("policy_zero_expires", {"expires": 0}),
        ("policy_unknown_keys", {"max-length": 1, "zz": 1, "aa": "b"}),
        ("policy_bad_dlx", {"dead-letter-exchange": 5}),
        ("policy_bad_locator", {"queue-leader-locator": "bogus"}),
    ):
        yield (
            name,
            req("PUT", "/api/policies/%2F/golden-bad", {"pattern": "^x", "definition": definition}),
        )
    yield (
        "policy_missing_pattern",
        req("PUT", "/api/policies/%2F/golden-bad", {"definition": {"max-length": 1}}),
    )
    yield (
        "policy_bad_pattern",
        req(
            "PUT", "/api/policies/%2F/golden-bad", {"pattern": "(", "definition": {"max-length": 1}}
        ),
    )
    yield (
        "policy_bad_apply_to",
        req(
            "PUT",
            "/api/policies/%2F/golden-bad",
            {"pattern": "^x", "definition": {"max-length": 1}, "apply-to": "bogus"},
        ),
    )
    yield (
        "policy_bad_priority",
        req(
            "PUT",
            "/api/policies/%2F/golden-bad",
            {"pattern": "^x", "definition": {"max-length": 1}, "priority": "x"},
        ),
    )
    yield (
        "policy_missing_vhost",
        req(
            "PUT",
            "/api/policies/golden-missing/p",
            {"pattern": "^x", "definition": {"max-length": 1}},
        ),
    )
    yield "policy_missing", req("GET", "/api/policies/%2F/golden-missing")
    yield "policy_delete_missing", req("DELETE", "/api/policies/%2F/golden-missing")
    yield (
        "operator_policy_overflow",
        req(
            "PUT",
            "/api/operator-policies/%2F/golden-bad",
            {"pattern": "^x", "definition": {"overflow": "drop-head"}},
        ),
    )
    yield "operator_policy_by_policymaker", req("GET", "/api/operator-policies", user=pm)
    yield (
        "parameter_unknown_component",
        req("PUT", "/api/parameters/golden-bogus/%2F/x", {"value": {}}),
    )
    yield "parameter_missing", req("GET", "/api/parameters/federation-upstream/%2F/golden-missing")
    yield (
        "definitions_bad_json",
        req("POST", "/api/definitions", None)
        | {"raw": b"xx", "headers": {"Content-Type": "application/json"}},
    )
    yield (
        "definitions_missing_vhost",
        req(
            "POST",
            "/api/definitions",
            {
                "queues": [
                    {
                        "name": "x",
                        "vhost": "golden-missing",
                        "durable": False,
                        "auto_delete": False,
                        "arguments": {},
                    }
                ]
            },
        ),
    )
    yield "definitions_export_missing_vhost", req("GET", "/api/definitions/golden-missing")
    yield (
        "definitions_import_missing_vhost",
        req("POST", "/api/definitions/golden-missing", {"queues": []}),
    )
    yield "health_unknown_check", req("GET", "/api/health/checks/bogus")
    yield "health_port_not_listening", req("GET", "/api/health/checks/port-listener/1")
    yield "aliveness_missing_vhost", req("GET", "/api/aliveness-test/golden-missing")
    yield "aliveness_without_permissions", req("GET", "/api/aliveness-test/%2F", user=mon)
    yield "pagination_out_of_range", req("GET", "/api/queues?page=99&page_size=2&columns=name")
    yield "pagination_zero_page", req("GET", "/api/queues?page=0&columns=name")
    yield "pagination_not_a_number", req("GET", "/api/queues?page=x&columns=name")
    yield "pagination_page_too_large", req("GET", "/api/queues?page=1&page_size=501&columns=name")


def _answer(api: Api, request: dict[str, Any]) -> dict[str, Any]:
    answer = api.request(
        request["method"],
        request["path"],
        request["body"],
        user=request["user"],
        raw=request.get("raw"),
        headers=request.get("headers"),
    )
    try:
        body = answer.json()
    except ValueError:
        body = answer.body.decode("utf-8", "replace")
    return {"status": answer.status, "body": _unescape(body), "allow": answer.headers.get("allow")}


def _unescape(value: Any) -> Any:
    """RabbitMQ HTML-escapes some reasons depending on the request's content type; undo that."""
    if isinstance(value, str):
        return html.unescape(value)
    if isinstance(value, dict):
        return {key: _unescape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_unescape(item) for item in value]
    return value


@contextmanager
def scenario(api: Api, amqp_port: int) -> Iterator[Clients]:
    clients = build_state(api, amqp_port)
    try:
        yield clients
    finally:
        clients.close()
