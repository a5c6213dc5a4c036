"""The management API and /metrics over HTTPS, on a node process configured as an operator would."""

from __future__ import annotations

import base64
import gzip
import http.client
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from leveret.testing.process import LeveretProcess
from tests.support.certs import Authority
from tests.support.node import wait_for

AUTH = {"Authorization": "Basic " + base64.b64encode(b"guest:guest").decode()}
BODY_CAP = 4096


@dataclass
class Secured:
    node: LeveretProcess
    ca: Authority
    other_ca: Authority
    directory: Path

    def port(self, name: str) -> int:
        return self.node.ports[name]

    def context(self, ca: Authority | None = None) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=(ca or self.ca).certfile)

    def https(self, name: str = "mgmt_https") -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection(
            "127.0.0.1", self.port(name), timeout=10, context=self.context()
        )

    def plain(self, name: str = "mgmt") -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port(name), timeout=10)


def ask(
    connection: http.client.HTTPConnection,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, str], bytes]:
    connection.request(method, path, body=body, headers=headers or {})
    response = connection.getresponse()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    directory = tmp_path_factory.mktemp("mgmt-tls")
    ca = Authority(directory / "ca")
    other_ca = Authority(directory / "other", name="Other CA")
    server = ca.server()
    config = directory / "leveret.toml"
    config.write_text(
        f"""
[management.ssl]
port = 0
certfile = "{server.certfile}"
keyfile = "{server.keyfile}"
only = true

[management.http]
max_body_size = {BODY_CAP}

[prometheus.tcp]
port = 0

[prometheus.ssl]
port = 0
certfile = "{server.certfile}"
keyfile = "{server.keyfile}"
"""
    )
    node = LeveretProcess(extra_args=["--config", str(config)]).start()
    try:
        yield Secured(node, ca, other_ca, directory)
    finally:
        node.cleanup()


def test_the_ports_file_and_the_overview_name_every_listener(secured: Secured) -> None:
    assert {"mgmt", "mgmt_https", "prometheus", "prometheus_https"} <= set(secured.node.ports)
    status, _, body = ask(secured.https(), "GET", "/api/overview", headers=AUTH)
    assert status == 200
    protocols = {item["protocol"]: item["port"] for item in json.loads(body)["listeners"]}
    assert protocols["https"] == secured.port("mgmt_https")
    assert protocols["https/prometheus"] == secured.port("prometheus_https")
    assert protocols["http/prometheus"] == secured.port("prometheus")


def test_https_with_the_ca_and_the_security_headers(secured: Secured) -> None:
    status, headers, body = ask(secured.https(), "GET", "/api/whoami", headers=AUTH)
    assert status == 200 and json.loads(body)["name"] == "guest"
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in headers["content-security-policy"]
    assert headers["cache-control"] == "no-store"
    assert headers["strict-transport-security"].startswith("max-age=")
    # Refusals carry them too.
    status, headers, _ = ask(secured.https(), "GET", "/api/queues/%2F/missing", headers=AUTH)
    assert status == 404 and headers["x-content-type-options"] == "nosniff"


def test_a_client_trusting_another_ca_is_refused(secured: Secured) -> None:
    connection = http.client.HTTPSConnection(
        "127.0.0.1",
        secured.port("mgmt_https"),
        timeout=10,
        context=secured.context(secured.other_ca),
    )
    with pytest.raises(ssl.SSLCertVerificationError):
        ask(connection, "GET", "/api/overview", headers=AUTH)


def test_plain_http_refuses_credentials_when_https_only(secured: Secured) -> None:
    status, headers, body = ask(secured.plain(), "GET", "/api/overview", headers=AUTH)
    assert status == 403
    assert json.loads(body)["error"] == "https_required"
    assert str(secured.port("mgmt_https")) in json.loads(body)["reason"]
    assert "www-authenticate" not in headers
    # Without credentials an API route is refused the same way, not challenged (a 401 would
    # make a browser send them in clear).
    status, headers, _ = ask(secured.plain(), "GET", "/api/overview")
    assert status == 403 and "www-authenticate" not in headers
    # Probes and metrics need no credentials and stay on plain HTTP, without HSTS.
    status, headers, _ = ask(secured.plain(), "GET", "/health/live")
    assert status == 200 and "strict-transport-security" not in headers
    assert headers["x-content-type-options"] == "nosniff"
    status, _, body = ask(secured.plain(), "GET", "/metrics")
    assert status == 200 and b"rabbitmq_identity_info" in body


def test_metrics_on_their_own_ports(secured: Secured) -> None:
    for connection in (secured.plain("prometheus"), secured.https("prometheus_https")):
        status, headers, body = ask(connection, "GET", "/metrics")
        assert status == 200 and b"rabbitmq_identity_info" in body
        assert headers["content-type"].startswith("text/plain")
        status, _, _ = ask(connection, "GET", "/api/overview", headers=AUTH)
        assert status == 404


def test_two_requests_on_one_kept_alive_connection(secured: Secured) -> None:
    connection = secured.https()
    first, _, _ = ask(connection, "GET", "/api/whoami", headers=AUTH)
    assert connection.sock is not None
    local = connection.sock.getsockname()
    second, headers, _ = ask(connection, "GET", "/api/overview", headers=AUTH)
    assert (first, second) == (200, 200)
    assert connection.sock is not None and connection.sock.getsockname() == local
    assert headers.get("connection", "").lower() != "close"


def test_gzip_only_when_asked(secured: Secured) -> None:
    status, headers, body = ask(
        secured.https(), "GET", "/api/overview", headers={**AUTH, "Accept-Encoding": "gzip"}
    )
    assert status == 200 and headers["content-encoding"] == "gzip"
    assert "object_totals" in json.loads(gzip.decompress(body))
    status, headers, body = ask(secured.https(), "GET", "/api/overview", headers=AUTH)
    assert "content-encoding" not in headers and "object_totals" in json.loads(body)


def test_a_body_over_the_cap_gets_rabbitmqs_answer(secured: Secured) -> None:
    expected = {"error": "bad_request", "reason": "Exceeded HTTP request body size limit"}
    big = json.dumps({"vhosts": [{"name": "v" * 10}] * 400}).encode()
    assert len(big) > BODY_CAP
    json_headers = {**AUTH, "Content-Type": "application/json"}
    status, headers, body = ask(secured.https(), "POST", "/api/definitions", big, json_headers)
    assert (status, json.loads(body)) == (400, expected)
    assert headers["connection"] == "close"
    # Chunked, with no length announced: counted as it arrives.
    connection = secured.https()
    connection.putrequest("POST", "/api/definitions")
    for name, value in {**json_headers, "Transfer-Encoding": "chunked"}.items():
        connection.putheader(name, value)
    connection.endheaders()
    for start in range(0, len(big), 1000):
        piece = big[start : start + 1000]
        connection.send(b"%x\r\n%s\r\n" % (len(piece), piece))
    connection.send(b"0\r\n\r\n")
    response = connection.getresponse()
    assert (response.status, json.loads(response.read())) == (400, expected)
    # Under the cap it is imported.
    small = json.dumps({"vhosts": [{"name": "capped"}]}).encode()
    status, _, _ = ask(secured.https(), "POST", "/api/definitions", small, json_headers)
    assert status in (200, 201, 204)
    status, _, _ = ask(secured.https(), "GET", "/api/vhosts/capped", headers=AUTH)
    assert status == 200


def test_users_show_password_hashes_never_passwords(secured: Secured) -> None:
    status, _, body = ask(secured.https(), "GET", "/api/users/guest", headers=AUTH)
    user = json.loads(body)
    assert status == 200 and user["password_hash"] and "password" not in user
    assert b"guest" not in base64.b64decode(user["password_hash"])


def ctl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "leveret", "ctl", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "LEVERET_CTL_URL": ""},
    )


def test_ctl_over_https_with_cacert_and_insecure(secured: Secured) -> None:
    url = f"https://guest:guest@127.0.0.1:{secured.port('mgmt_https')}"
    trusted = ctl("--url", url, "--cacert", secured.ca.certfile, "list_vhosts")
    assert trusted.returncode == 0, trusted.stderr
    assert "/" in trusted.stdout.split()
    untrusted = ctl("--url", url, "--cacert", secured.other_ca.certfile, "list_vhosts")
    assert untrusted.returncode == 69
    assert "CERTIFICATE_VERIFY_FAILED" in untrusted.stderr
    insecure = ctl("--url", url, "--insecure", "list_vhosts")
    assert insecure.returncode == 0, insecure.stderr
    plain_url = f"http://guest:guest@127.0.0.1:{secured.port('mgmt')}"
    misused = ctl("--url", plain_url, "--insecure", "list_vhosts")
    assert misused.returncode == 64 and "https://" in misused.stderr


def served_serial(port: int, ca: Authority) -> int:
    from cryptography import x509

    context = ssl.create_default_context(cafile=ca.certfile)
    with (
        socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number


def test_sighup_reloads_the_certificate(secured: Secured) -> None:
    port = secured.port("mgmt_https")
    before = served_serial(port, secured.ca)
    renewed = secured.ca.server("renewed")
    # The configured files get the new certificate, as a renewal would write them.
    server_files = secured.directory / "ca"
    Path(server_files / "server.crt").write_bytes(Path(renewed.certfile).read_bytes())
    Path(server_files / "server.key").write_bytes(Path(renewed.keyfile).read_bytes())
    assert secured.node.proc is not None
    secured.node.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: served_serial(port, secured.ca) == renewed.serial, timeout=10, interval=0.2)
    assert before != renewed.serial
    status, _, _ = ask(secured.https(), "GET", "/api/whoami", headers=AUTH)
    assert status == 200


def test_https_without_a_certificate_stops_the_node_with_78(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text("[management.ssl]\nport = 0\nkeyfile = '/nowhere.key'\n")
    node = LeveretProcess(extra_args=["--config", str(config)])
    try:
        with pytest.raises(RuntimeError) as failed:
            node.start()
        assert "exited with 78" in str(failed.value)
        assert "management.ssl.certfile is required" in str(failed.value)
    finally:
        node.cleanup()


def test_client_certificates_when_the_node_asks_for_them(tmp_path: Path) -> None:
    ca = Authority(tmp_path / "ca")
    server = ca.server()
    client = ca.issue("client", "monitoring", client=True)
    config = tmp_path / "leveret.toml"
    config.write_text(
        f"""
[management.ssl]
port = 0
certfile = "{server.certfile}"
keyfile = "{server.keyfile}"
cacertfile = "{ca.certfile}"
verify = "verify_peer"
fail_if_no_peer_cert = true
"""
    )
    with LeveretProcess(extra_args=["--config", str(config)]) as node:
        port = node.ports["mgmt_https"]
        anonymous = ssl.create_default_context(cafile=ca.certfile)
        connection = http.client.HTTPSConnection("127.0.0.1", port, timeout=10, context=anonymous)
        with pytest.raises((ssl.SSLError, ConnectionError)):
            ask(connection, "GET", "/api/whoami", headers=AUTH)
        known = ssl.create_default_context(cafile=ca.certfile)
        known.load_cert_chain(client.certfile, client.keyfile)
        connection = http.client.HTTPSConnection("127.0.0.1", port, timeout=10, context=known)
        status, _, _ = ask(connection, "GET", "/api/whoami", headers=AUTH)
        assert status == 200
