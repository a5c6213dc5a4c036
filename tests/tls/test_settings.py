"""leveret.tls: ssl_options tables parsed with errors naming the key, contexts, and reloads."""

from __future__ import annotations

import os
import shutil
import socket
import ssl
import threading
from pathlib import Path

import pytest
from cryptography import x509

from leveret.tls import (
    CertificateReloader,
    TLSConfigError,
    TLSSettings,
    client_context,
    parse_settings,
    server_context,
)
from tests.support.certs import Authority


def test_a_table_becomes_settings_with_rabbitmq_names() -> None:
    settings = parse_settings(
        {
            "cacertfile": "/ca.pem",
            "certfile": "/c.pem",
            "keyfile": "/k.pem",
            "verify": "verify_peer",
            "fail_if_no_peer_cert": True,
            "versions": ["tlsv1.3", "tlsv1.2"],
            "ciphers": ["ECDHE-ECDSA-AES256-GCM-SHA384"],
        }
    )
    assert settings == TLSSettings(
        cacertfile="/ca.pem",
        certfile="/c.pem",
        keyfile="/k.pem",
        verify="verify_peer",
        fail_if_no_peer_cert=True,
        versions=("tlsv1.3", "tlsv1.2"),
        ciphers=("ECDHE-ECDSA-AES256-GCM-SHA384",),
    )
    assert TLSSettings().verify == "verify_none"  # RabbitMQ's default
    assert not TLSSettings().fail_if_no_peer_cert


@pytest.mark.parametrize(
    ("table", "named"),
    [
        ({"verify": "verify_always"}, "ssl_options.verify = 'verify_always'"),
        ({"fail_if_no_peer_cert": "yes"}, "ssl_options.fail_if_no_peer_cert"),
        ({"versions": ["sslv3"]}, "ssl_options.versions"),
        ({"versions": []}, "ssl_options.versions"),
        ({"certfile": 5}, "ssl_options.certfile"),
        ({"cert_file": "/x"}, "unknown key ssl_options.cert_file"),
    ],
)
def test_a_wrong_value_is_refused_naming_its_key(table: dict[str, object], named: str) -> None:
    with pytest.raises(TLSConfigError, match=named.replace(".", r"\.")):
        parse_settings(table)


def test_contexts_name_the_key_whose_file_fails(tmp_path: Path) -> None:
    authority = Authority(tmp_path)
    server = authority.server()
    with pytest.raises(TLSConfigError, match="certfile is required"):
        server_context(TLSSettings())
    with pytest.raises(TLSConfigError, match="cacertfile is required"):
        server_context(TLSSettings(certfile=server.certfile, verify="verify_peer"))
    missing = str(tmp_path / "missing.pem")
    with pytest.raises(TLSConfigError, match=r"ssl_options\.certfile.*missing\.pem"):
        server_context(TLSSettings(certfile=missing))
    with pytest.raises(TLSConfigError, match=r"ssl_options\.cacertfile"):
        server_context(
            TLSSettings(certfile=server.certfile, keyfile=server.keyfile, cacertfile=missing)
        )
    other = authority.issue("other", "other")
    with pytest.raises(TLSConfigError, match=r"certfile/keyfile"):  # key of another certificate
        server_context(TLSSettings(certfile=server.certfile, keyfile=other.keyfile))
    with pytest.raises(TLSConfigError, match=r"ssl_options\.ciphers"):
        server_context(
            TLSSettings(certfile=server.certfile, keyfile=server.keyfile, ciphers=("NOPE",))
        )


def test_versions_bound_the_protocol(tmp_path: Path) -> None:
    server = Authority(tmp_path).server()
    only_12 = TLSSettings(certfile=server.certfile, keyfile=server.keyfile, versions=("tlsv1.2",))
    context = server_context(only_12)
    assert context.minimum_version == context.maximum_version == ssl.TLSVersion.TLSv1_2
    assert (
        server_context(TLSSettings(certfile=server.certfile, keyfile=server.keyfile)).verify_mode
        == ssl.CERT_NONE
    )
    peer = TLSSettings(
        certfile=server.certfile,
        keyfile=server.keyfile,
        cacertfile=server.certfile,
        verify="verify_peer",
    )
    assert server_context(peer).verify_mode == ssl.CERT_OPTIONAL
    required = TLSSettings(**{**_fields(peer), "fail_if_no_peer_cert": True})
    assert server_context(required).verify_mode == ssl.CERT_REQUIRED


def _fields(settings: TLSSettings) -> dict[str, object]:
    return {name: getattr(settings, name) for name in TLSSettings.__slots__ if name != "origin"}


class _EchoServer:
    """A TLS server on 127.0.0.1 that completes handshakes with `context`, one at a time."""

    def __init__(self, context: ssl.SSLContext) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(10)
        self.port = self.listener.getsockname()[1]
        self.context = context
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        for _ in range(20):  # bounded: a test makes a handful of handshakes
            try:
                raw, _ = self.listener.accept()
            except OSError:
                return
            try:
                with self.context.wrap_socket(raw, server_side=True) as wrapped:
                    wrapped.recv(1)
            except (OSError, ssl.SSLError):
                pass

    def peer_serial(self, ca: str) -> int:
        client = ssl.create_default_context(cafile=ca)
        with (
            socket.create_connection(("127.0.0.1", self.port), timeout=10) as raw,
            client.wrap_socket(raw, server_hostname="localhost") as wrapped,
        ):
            der = wrapped.getpeercert(binary_form=True)
        assert der is not None
        return x509.load_der_x509_certificate(der).serial_number

    def close(self) -> None:
        self.listener.close()


def test_the_reloader_swaps_the_certificate_in_place_and_keeps_it_on_error(
    tmp_path: Path,
) -> None:
    tls_dir = tmp_path
    authority = Authority(tls_dir / "ca")
    first = authority.server("first")
    second = authority.server("second")
    live = tls_dir / "live"
    live.mkdir()
    shutil.copy(first.certfile, live / "server.crt")
    shutil.copy(first.keyfile, live / "server.key")
    settings = TLSSettings(certfile=str(live / "server.crt"), keyfile=str(live / "server.key"))
    context = server_context(settings)
    reloader = CertificateReloader()
    reloader.register_context("amqps", context, settings)
    server = _EchoServer(context)
    try:
        assert server.peer_serial(authority.certfile) == first.serial
        assert reloader.check() == []  # nothing changed, nothing reloaded

        # A certificate without its key: refused, the old pair keeps serving.
        shutil.copy(second.certfile, live / "server.crt")
        os.utime(live / "server.crt", ns=(1, 1))
        [(name, reason)] = reloader.check()
        assert name == "amqps" and reason is not None and "certfile/keyfile" in reason
        assert server.peer_serial(authority.certfile) == first.serial

        # Its key arrives: the next check loads the pair, and new handshakes see it.
        shutil.copy(second.keyfile, live / "server.key")
        assert reloader.check() == [("amqps", None)]
        assert server.peer_serial(authority.certfile) == second.serial

        # An explicit reload (SIGHUP's) reloads whatever the files say now.
        shutil.copy(first.certfile, live / "server.crt")
        shutil.copy(first.keyfile, live / "server.key")
        assert reloader.reload_all("SIGHUP") == [("amqps", None)]
        assert server.peer_serial(authority.certfile) == first.serial
    finally:
        server.close()


def test_a_client_context_checks_the_server_unless_told_not_to(tmp_path: Path) -> None:
    ca = Authority(tmp_path)
    checking = client_context(TLSSettings(cacertfile=ca.certfile, verify="verify_peer"))
    assert checking.verify_mode == ssl.CERT_REQUIRED and checking.check_hostname
    trusting = client_context(TLSSettings(verify="verify_none"))
    assert trusting.verify_mode == ssl.CERT_NONE and not trusting.check_hostname
