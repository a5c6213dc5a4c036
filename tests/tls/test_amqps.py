"""AMQP over TLS through pika, aio-pika and kombu: certificates checked both ways, and listed."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import ssl
import urllib.request
from pathlib import Path
from typing import Any

import aio_pika
import kombu
import pika
import pytest
from pika.exceptions import AMQPConnectionError

from leveret.server.node import StartupError
from leveret.session import open_sessions
from leveret.tls import TLSSettings
from tests.support.certs import Authority, Issued
from tests.support.node import InProcessNode, wait_for
from tests.tls.conftest import peer_checking


def client_ssl(
    authority: Authority, client: Issued | None = None, hostname: bool = True
) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=authority.certfile)
    context.check_hostname = hostname
    if client is not None:
        context.load_cert_chain(client.certfile, client.keyfile)
    return context


def pika_params(
    node: InProcessNode, context: ssl.SSLContext, host: str = "localhost", **extra: Any
) -> pika.ConnectionParameters:
    return pika.ConnectionParameters(
        host="127.0.0.1",
        port=node.node.ports["amqps"],
        ssl_options=pika.SSLOptions(context, server_hostname=host),
        credentials=extra.pop("credentials", pika.PlainCredentials("guest", "guest")),
        connection_attempts=1,
        socket_timeout=5,
        **extra,
    )


def api(node: InProcessNode, path: str) -> Any:
    request = urllib.request.Request(
        f"http://127.0.0.1:{node.node.ports['mgmt']}{path}",
        headers={"Authorization": "Basic " + base64.b64encode(b"guest:guest").decode()},
    )
    with urllib.request.urlopen(request, timeout=10) as reply:
        return json.load(reply)


def test_pika_over_tls_with_a_client_certificate_and_the_listing_says_so(
    tls_node: InProcessNode, authority: Authority
) -> None:
    client = authority.issue("client", "app-1", unit="Billing", client=True)
    params = pika_params(tls_node, client_ssl(authority, client))
    with pika.BlockingConnection(params) as connection:
        channel = connection.channel()
        channel.queue_declare("tls-q")
        channel.confirm_delivery()
        channel.basic_publish("", "tls-q", b"secret" * 1000)
        method, _, body = channel.basic_get("tls-q", auto_ack=True)
        assert method is not None and body == b"secret" * 1000
        [listed] = api(tls_node, "/api/connections")
    assert listed["ssl"] is True
    assert listed["ssl_protocol"] == "tlsv1.3"
    assert listed["ssl_cipher"] in ("aes_256_gcm", "aes_128_gcm", "chacha20_poly1305")
    assert listed["ssl_hash"] == "aead"  # as RabbitMQ names the MAC of AEAD suites
    assert listed["ssl_key_exchange"] == "any"
    assert listed["peer_cert_subject"] == "CN=app-1,OU=Billing,O=Leveret Tests"
    assert listed["peer_cert_issuer"] == "CN=Leveret Test CA,O=Leveret Tests"
    assert " - " in listed["peer_cert_validity"]
    assert listed["port"] == tls_node.node.ports["amqps"]
    assert listed["auth_mechanism"] == "PLAIN"
    listeners = api(tls_node, "/api/overview")["listeners"]
    assert {"amqp", "amqp/ssl"} <= {listener["protocol"] for listener in listeners}


def test_plain_amqp_on_the_same_node_is_listed_without_tls(tls_node: InProcessNode) -> None:
    with pika.BlockingConnection(pika.URLParameters(tls_node.url)) as connection:
        connection.channel()
        [listed] = api(tls_node, "/api/connections")
    assert listed["ssl"] is False and listed["ssl_protocol"] is None


def test_aio_pika_and_kombu_connect_with_amqps_urls(
    authority: Authority, server_cert: Issued
) -> None:
    # Server checked by the clients; no client certificate asked for (verify_none).
    node = InProcessNode(
        amqps_port=0,
        ssl_options=TLSSettings(certfile=server_cert.certfile, keyfile=server_cert.keyfile),
    )
    try:
        port = node.node.ports["amqps"]

        async def with_aio_pika() -> bytes:
            connection = await aio_pika.connect(
                f"amqps://guest:guest@localhost:{port}/",
                ssl_context=client_ssl(authority),
                timeout=10,
            )
            async with connection:
                channel = await connection.channel()
                queue = await channel.declare_queue("aio-tls")
                await channel.default_exchange.publish(aio_pika.Message(b"hi"), "aio-tls")
                message = await queue.get(timeout=5)
                await message.ack()
                return message.body

        assert asyncio.run(with_aio_pika()) == b"hi"

        with kombu.Connection(
            f"amqps://guest:guest@localhost:{port}//",
            ssl={"ca_certs": authority.certfile, "cert_reqs": ssl.CERT_REQUIRED},
            connect_timeout=10,
        ) as connection:
            queue = connection.SimpleQueue("kombu-tls")
            queue.put({"n": 1})
            message = queue.get(timeout=5)
            message.ack()
            assert message.payload == {"n": 1}
            queue.close()
    finally:
        node.stop()


def test_a_client_without_a_certificate_is_refused_and_the_reason_logged(
    tls_node: InProcessNode, authority: Authority, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="leveret.server.tls_listener")
    with pytest.raises(AMQPConnectionError):
        pika.BlockingConnection(pika_params(tls_node, client_ssl(authority)))
    wait_for(lambda: "PEER_DID_NOT_RETURN_A_CERTIFICATE" in caplog.text)
    assert "TLS handshake with 127.0.0.1:" in caplog.text


def test_without_fail_if_no_peer_cert_a_client_may_come_without_one(
    authority: Authority, server_cert: Issued
) -> None:
    node = InProcessNode(
        amqps_port=0, ssl_options=peer_checking(authority, server_cert, required=False)
    )
    try:
        with pika.BlockingConnection(pika_params(node, client_ssl(authority))) as connection:
            connection.channel()
            [listed] = api(node, "/api/connections")
        assert listed["ssl"] is True and listed["peer_cert_subject"] is None
    finally:
        node.stop()


@pytest.mark.parametrize("problem", ["expired", "another CA"])
def test_a_client_certificate_that_does_not_verify_is_refused(
    tls_node: InProcessNode,
    authority: Authority,
    tmp_path: Path,
    problem: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="leveret.server.tls_listener")
    if problem == "expired":
        client = authority.issue("old", "old-app", expired=True, client=True)
        reason = "certificate has expired"
    else:
        client = Authority(tmp_path / "other", "Other CA").issue("stranger", "x", client=True)
        reason = "unable to get local issuer certificate"
    with pytest.raises(AMQPConnectionError):
        pika.BlockingConnection(pika_params(tls_node, client_ssl(authority, client)))
    wait_for(lambda: reason in caplog.text)


@pytest.mark.parametrize("problem", ["expired", "another CA", "wrong hostname"])
def test_clients_refuse_a_server_certificate_that_does_not_verify(
    authority: Authority, tmp_path: Path, problem: str
) -> None:
    if problem == "expired":
        server = authority.server("expired", expired=True)
    elif problem == "another CA":
        server = Authority(tmp_path / "other", "Other CA").server("foreign")
    else:
        server = authority.issue("elsewhere", "elsewhere", hosts=("db.example",))
    node = InProcessNode(
        amqps_port=0, ssl_options=TLSSettings(certfile=server.certfile, keyfile=server.keyfile)
    )
    try:
        # pika reports a failed check of the server's certificate as the SSL error itself.
        with pytest.raises((AMQPConnectionError, ssl.SSLError)):
            pika.BlockingConnection(pika_params(node, client_ssl(authority)))
        assert node.call(lambda: len(open_sessions(node.broker))) == 0
    finally:
        node.stop()


def test_a_node_with_broken_ssl_options_does_not_start(
    tmp_path: Path, authority: Authority
) -> None:
    missing = str(tmp_path / "nope.pem")
    with pytest.raises(StartupError, match=r"ssl_options\.certfile") as raised:
        InProcessNode(amqps_port=0, ssl_options=TLSSettings(certfile=missing))
    assert raised.value.exit_code == 78
