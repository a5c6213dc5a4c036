"""SASL EXTERNAL: offered on TLS only, the user named by the client certificate's DN or CN."""

from __future__ import annotations

import logging
import socket
import ssl
import struct

import pika
import pytest
from pika.credentials import ExternalCredentials
from pika.exceptions import AMQPConnectionError, ProbableAuthenticationError

from leveret.tls import TLSSettings
from tests.support.certs import Authority, Issued
from tests.support.node import InProcessNode, wait_for
from tests.tls.conftest import peer_checking
from tests.tls.test_amqps import api, client_ssl, pika_params

DN = "CN=app-1,OU=Billing,O=Leveret Tests"


def offered_mechanisms(port: int, context: ssl.SSLContext | None) -> list[str]:
    """The mechanisms of the server's connection.start, read off a raw socket."""
    raw = socket.create_connection(("127.0.0.1", port), timeout=5)
    sock = context.wrap_socket(raw, server_hostname="localhost") if context else raw
    with sock:
        sock.sendall(b"AMQP\x00\x00\x09\x01")
        data = b""
        for _ in range(50):  # bounded: connection.start is one small frame
            if len(data) >= 7 and len(data) >= 8 + struct.unpack(">I", data[3:7])[0]:
                break
            chunk = sock.recv(65536)
            assert chunk, "the server closed the connection before connection.start"
            data += chunk
    payload = data[7 : 7 + struct.unpack(">I", data[3:7])[0]]
    offset = 4 + 2  # class and method ids, then the versions
    table_size = struct.unpack(">I", payload[offset : offset + 4])[0]
    offset += 4 + table_size
    size = struct.unpack(">I", payload[offset : offset + 4])[0]
    return payload[offset + 4 : offset + 4 + size].decode().split()


def test_external_is_offered_on_tls_listeners_only(
    tls_node: InProcessNode, authority: Authority
) -> None:
    client = authority.issue("client", "app-1", client=True)
    assert offered_mechanisms(tls_node.port, None) == ["PLAIN", "AMQPLAIN"]
    assert offered_mechanisms(tls_node.node.ports["amqps"], client_ssl(authority, client)) == [
        "PLAIN",
        "AMQPLAIN",
        "EXTERNAL",
    ]


def test_external_logs_in_the_user_named_by_the_certificate_dn(
    tls_node: InProcessNode, authority: Authority
) -> None:
    client = authority.issue("client", "app-1", unit="Billing", client=True)
    tls_node.add_user(DN, "unused-password")
    params = pika_params(tls_node, client_ssl(authority, client), credentials=ExternalCredentials())
    with pika.BlockingConnection(params) as connection:
        channel = connection.channel()
        channel.queue_declare("ext-q")
        [listed] = api(tls_node, "/api/connections")
    assert listed["user"] == DN
    assert listed["auth_mechanism"] == "EXTERNAL"


def test_external_with_common_name(authority: Authority, server_cert: Issued) -> None:
    node = InProcessNode(
        amqps_port=0,
        ssl_options=peer_checking(authority, server_cert, required=True),
        ssl_cert_login_from="common_name",
    )
    try:
        client = authority.issue("client", "app-2", unit="Billing", client=True)
        node.add_user("app-2", "unused-password")
        params = pika_params(node, client_ssl(authority, client), credentials=ExternalCredentials())
        with pika.BlockingConnection(params) as connection:
            connection.channel()
            [listed] = api(node, "/api/connections")
        assert listed["user"] == "app-2"
    finally:
        node.stop()


def test_external_for_an_unknown_user_is_refused_as_rabbitmq_does(
    tls_node: InProcessNode, authority: Authority, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    client = authority.issue("client", "nobody", client=True)
    params = pika_params(tls_node, client_ssl(authority, client), credentials=ExternalCredentials())
    with pytest.raises(ProbableAuthenticationError) as refused:
        pika.BlockingConnection(params)
    assert "ACCESS_REFUSED - Login was refused using authentication mechanism EXTERNAL. " in str(
        refused.value
    )
    wait_for(lambda: "user 'CN=nobody,O=Leveret Tests' - invalid credentials" in caplog.text)


def test_external_without_a_client_certificate_is_refused(
    authority: Authority, server_cert: Issued, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    node = InProcessNode(
        amqps_port=0, ssl_options=peer_checking(authority, server_cert, required=False)
    )
    try:
        params = pika_params(node, client_ssl(authority), credentials=ExternalCredentials())
        with pytest.raises((ProbableAuthenticationError, AMQPConnectionError)):
            pika.BlockingConnection(params)
        wait_for(lambda: "connection peer presented no TLS (x.509) certificate" in caplog.text)
    finally:
        node.stop()


def test_external_when_certificates_are_not_asked_for_is_refused(
    authority: Authority, server_cert: Issued, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    node = InProcessNode(
        amqps_port=0,
        ssl_options=TLSSettings(certfile=server_cert.certfile, keyfile=server_cert.keyfile),
    )
    try:
        params = pika_params(node, client_ssl(authority), credentials=ExternalCredentials())
        with pytest.raises((ProbableAuthenticationError, AMQPConnectionError)):
            pika.BlockingConnection(params)
        # verify_none: the client is not asked for a certificate, as with RabbitMQ.
        wait_for(lambda: "connection peer presented no TLS (x.509) certificate" in caplog.text)
    finally:
        node.stop()


def test_external_on_plain_amqp_is_an_invalid_mechanism(tls_node: InProcessNode) -> None:
    params = pika.ConnectionParameters(
        "127.0.0.1", tls_node.port, credentials=ExternalCredentials(), connection_attempts=1
    )
    # pika itself refuses to go on: the server does not offer EXTERNAL here.
    with pytest.raises(AMQPConnectionError):
        pika.BlockingConnection(params)
