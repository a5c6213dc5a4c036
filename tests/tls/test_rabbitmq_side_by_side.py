"""AMQPS and EXTERNAL beside RabbitMQ 3.10.8 configured the same way (its ssl listener and the
rabbitmq_auth_mechanism_ssl plugin): what clients see and what the management API lists."""

from __future__ import annotations

import base64
import json
import ssl
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pika
import pytest
from pika.credentials import ExternalCredentials
from pika.exceptions import AMQPConnectionError, ProbableAuthenticationError

from leveret.tls import TLSSettings
from tests.support.certs import Authority
from tests.support.node import InProcessNode, wait_for
from tests.support.ports import restartable_ports
from tests.support.rabbitmq import require_rabbitmq, start_rabbitmq
from tests.tls.test_amqps import client_ssl
from tests.tls.test_external import offered_mechanisms

pytestmark = pytest.mark.rabbitmq

USER = "CN=side-by-side,OU=Interop,O=Leveret Tests"


@dataclass
class Broker:
    name: str
    amqps_port: int
    mgmt_port: int

    def api(self, method: str, path: str, body: Any = None) -> Any:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.mgmt_port}{path}",
            data=json.dumps(body).encode() if body is not None else None,
            method=method,
            headers={
                "Authorization": "Basic " + base64.b64encode(b"guest:guest").decode(),
                "Content-Type": "application/json",
            },
        )
        with urllib.request.urlopen(request, timeout=10) as reply:
            text = reply.read()
            return json.loads(text) if text else None

    def add_user(self, name: str) -> None:
        quoted = urllib.parse.quote(name, safe="")
        self.api("PUT", f"/api/users/{quoted}", {"password": "unused", "tags": ""})
        grant = {"configure": ".*", "write": ".*", "read": ".*"}
        self.api("PUT", f"/api/permissions/%2F/{quoted}", grant)


@pytest.fixture(scope="module")
def authority(tmp_path_factory: pytest.TempPathFactory) -> Authority:
    return Authority(tmp_path_factory.mktemp("interop-ca"))


@pytest.fixture(scope="module")
def brokers(authority: Authority) -> Iterator[tuple[Broker, Broker]]:
    require_rabbitmq()
    server = authority.server("interop-server")
    settings = TLSSettings(
        cacertfile=authority.certfile,
        certfile=server.certfile,
        keyfile=server.keyfile,
        verify="verify_peer",
        fail_if_no_peer_cert=True,
    )
    [ssl_port] = restartable_ports(1)
    rabbit = start_rabbitmq(
        management=True,
        plugins=["rabbitmq_auth_mechanism_ssl"],
        extra_config=[
            f"listeners.ssl.default = {ssl_port}",
            f"ssl_options.cacertfile = {authority.certfile}",
            f"ssl_options.certfile = {server.certfile}",
            f"ssl_options.keyfile = {server.keyfile}",
            "ssl_options.verify = verify_peer",
            "ssl_options.fail_if_no_peer_cert = true",
            "auth_mechanisms.1 = PLAIN",
            "auth_mechanisms.2 = AMQPLAIN",
            "auth_mechanisms.3 = EXTERNAL",
            "ssl_cert_login_from = distinguished_name",
        ],
    )
    leveret = InProcessNode(amqps_port=0, ssl_options=settings)
    try:
        assert rabbit.mgmt_port is not None
        pair = (
            Broker("leveret", leveret.node.ports["amqps"], leveret.node.ports["mgmt"]),
            Broker("rabbitmq", ssl_port, rabbit.mgmt_port),
        )
        for broker in pair:
            broker.add_user(USER)
        yield pair
    finally:
        leveret.stop()
        rabbit.stop()


def _params(broker: Broker, context: Any, **extra: Any) -> pika.ConnectionParameters:
    return pika.ConnectionParameters(
        "127.0.0.1",
        broker.amqps_port,
        ssl_options=pika.SSLOptions(context, "localhost"),
        connection_attempts=1,
        socket_timeout=10,
        **extra,
    )


def test_the_same_mechanisms_are_offered_on_tls(
    brokers: tuple[Broker, Broker], authority: Authority, tmp_path: Path
) -> None:
    client = authority.issue("mech-client", "side-by-side", unit="Interop", client=True)
    offered = [
        sorted(offered_mechanisms(broker.amqps_port, client_ssl(authority, client)))
        for broker in brokers
    ]
    assert offered[0] == offered[1] == ["AMQPLAIN", "EXTERNAL", "PLAIN"]


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_3, ssl.TLSVersion.TLSv1_2])
def test_external_login_and_the_listing_match(
    brokers: tuple[Broker, Broker], authority: Authority, version: ssl.TLSVersion
) -> None:
    client = authority.issue("ext-client", "side-by-side", unit="Interop", client=True)
    protocol = {ssl.TLSVersion.TLSv1_3: "tlsv1.3", ssl.TLSVersion.TLSv1_2: "tlsv1.2"}[version]
    seen = []
    for broker in brokers:
        context = client_ssl(authority, client)
        context.maximum_version = version
        params = _params(broker, context, credentials=ExternalCredentials())
        with pika.BlockingConnection(params) as connection:
            connection.channel()

            def listed(broker: Broker = broker) -> list[dict[str, Any]]:
                return [
                    c
                    for c in broker.api("GET", "/api/connections")
                    if c["user"] == USER and c["ssl_protocol"] == protocol
                ]

            # RabbitMQ's listing lags its connections by its stats interval: the connection of
            # the other TLS version may still be listed, this one not yet.
            [row] = wait_for(listed, timeout=20, interval=0.5)
            seen.append(row)
    keys = (
        "ssl",
        "ssl_protocol",
        "ssl_key_exchange",
        "ssl_cipher",
        "ssl_hash",
        "peer_cert_subject",
        "peer_cert_issuer",
        "auth_mechanism",
        "user",
    )
    leveret_row, rabbit_row = ({key: row[key] for key in keys} for row in seen)
    assert leveret_row == rabbit_row
    # The validity is formatted alike (seconds may differ in how they are rounded).
    assert seen[0]["peer_cert_validity"][:10] == seen[1]["peer_cert_validity"][:10]


def test_an_unknown_external_user_is_refused_alike(
    brokers: tuple[Broker, Broker], authority: Authority
) -> None:
    client = authority.issue("stranger", "not-a-user", client=True)
    texts = []
    for broker in brokers:
        params = _params(broker, client_ssl(authority, client), credentials=ExternalCredentials())
        with pytest.raises(ProbableAuthenticationError) as refused:
            pika.BlockingConnection(params)
        texts.append(str(refused.value))
    assert texts[0] == texts[1]
    assert "ACCESS_REFUSED - Login was refused using authentication mechanism EXTERNAL" in texts[0]


def test_a_client_without_a_certificate_is_refused_by_both(
    brokers: tuple[Broker, Broker], authority: Authority
) -> None:
    for broker in brokers:
        with pytest.raises((AMQPConnectionError, ConnectionError)):
            pika.BlockingConnection(_params(broker, client_ssl(authority)))
