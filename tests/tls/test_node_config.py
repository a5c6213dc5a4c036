"""AMQPS from the configuration file, flags and environment; reloads on SIGHUP and file changes."""

from __future__ import annotations

import shutil
import signal
import socket
import ssl
from pathlib import Path

import pika
import pytest
from cryptography import x509

from leveret.config import Config, ConfigError
from leveret.tls import TLSSettings
from tests.startup.test_startup_errors import one_line, run_server
from tests.support.certs import Authority, Issued
from tests.support.node import InProcessNode, NodeProcess, wait_for


def served_serial(port: int, ca: str) -> int:
    """The serial number of the certificate a new TLS handshake on `port` gets."""
    context = ssl.create_default_context(cafile=ca)
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname="localhost") as wrapped,
    ):
        der = wrapped.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number


def install(issued: Issued, directory: Path) -> tuple[str, str]:
    """Copy a certificate and its key to the paths the node is configured with."""
    directory.mkdir(exist_ok=True)
    certfile, keyfile = directory / "server.crt", directory / "server.key"
    shutil.copy(issued.certfile, certfile)
    shutil.copy(issued.keyfile, keyfile)
    return str(certfile), str(keyfile)


def write_config(path: Path, certfile: str, keyfile: str, extra: str = "") -> Path:
    path.write_text(
        f'{extra}\n[ssl_options]\ncertfile = "{certfile}"\nkeyfile = "{keyfile}"\n'
        'versions = ["tlsv1.3", "tlsv1.2"]\n'
    )
    return path


def test_the_port_defaults_to_5671_only_when_tls_is_configured(tmp_path: Path) -> None:
    assert Config().amqps_listener_port is None
    assert Config(ssl_options=TLSSettings(certfile="c")).amqps_listener_port == 5671
    assert Config(ssl_options=TLSSettings(certfile="c"), amqps_port=0).amqps_listener_port == 0
    with pytest.raises(ConfigError, match=r"amqps_port = 5671 needs an \[ssl_options\] table"):
        Config.load(None, {"amqps_port": "5671"})
    inline = Config.load(None, {"ssl_options": '{certfile = "/c.pem", verify = "verify_peer"}'})
    assert inline.ssl_options == TLSSettings(certfile="/c.pem", verify="verify_peer")
    with pytest.raises(ConfigError, match=r"invalid ssl_options = 'certfile'"):
        Config.load(None, {"ssl_options": "certfile"})
    config = tmp_path / "leveret.toml"
    config.write_text('[ssl_options]\nverify = "verify_sometimes"\n')
    with pytest.raises(ConfigError, match=r"invalid ssl_options\.verify = 'verify_sometimes'"):
        Config.load(str(config), {})


def test_a_wrong_ssl_option_stops_the_node_naming_the_key(tmp_path: Path) -> None:
    config = tmp_path / "leveret.toml"
    config.write_text('[ssl_options]\ncertfile = "/no/such.pem"\nfail_if_no_peer_cert = "maybe"\n')
    result = run_server(tmp_path, "--config", str(config))
    assert result.returncode == 78
    assert "ssl_options.fail_if_no_peer_cert = 'maybe'" in one_line(result)
    config.write_text('[ssl_options]\ncertfile = "/no/such.pem"\n')
    result = run_server(tmp_path, "--config", str(config), "--amqps-port", "0")
    assert result.returncode == 78
    assert "ssl_options.certfile (/no/such.pem)" in one_line(result)


def test_a_node_process_writes_amqps_to_its_ports_file_and_reloads_on_sighup(
    tmp_path: Path,
) -> None:
    authority = Authority(tmp_path / "ca")
    first, second = authority.server("first"), authority.server("second")
    certfile, keyfile = install(first, tmp_path / "live")
    config = write_config(tmp_path / "leveret.toml", certfile, keyfile)
    with NodeProcess(extra_args=["--config", str(config), "--amqps-port", "0"]) as node:
        port = node.ports["amqps"]
        assert served_serial(port, authority.certfile) == first.serial
        install(second, tmp_path / "live")
        assert node.proc is not None
        node.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: served_serial(port, authority.certfile) == second.serial, timeout=10)
        wait_for(lambda: "reloaded (SIGHUP)" in node.log_tail(100))
        # A connection made with the new certificate works as before.
        context = ssl.create_default_context(cafile=authority.certfile)
        params = pika.ConnectionParameters(
            "127.0.0.1",
            port,
            ssl_options=pika.SSLOptions(context, "localhost"),
            credentials=pika.PlainCredentials("guest", "guest"),
        )
        with pika.BlockingConnection(params) as connection:
            connection.channel().queue_declare("after-reload")


def test_the_environment_gives_the_port(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    authority = Authority(tmp_path / "ca")
    certfile, keyfile = install(authority.server(), tmp_path / "live")
    config = write_config(tmp_path / "leveret.toml", certfile, keyfile)
    # The node process inherits this process's environment.
    monkeypatch.setenv("LEVERET_AMQPS_PORT", "0")
    with NodeProcess(extra_args=["--config", str(config)]) as node:
        assert node.ports["amqps"] not in (0, 5671)
        assert served_serial(node.ports["amqps"], authority.certfile)


def test_a_changed_file_is_reloaded_without_a_signal_and_a_bad_one_is_not(
    tmp_path: Path,
) -> None:
    authority = Authority(tmp_path / "ca")
    first, second = authority.server("first"), authority.server("second")
    certfile, keyfile = install(first, tmp_path / "live")
    node = InProcessNode(amqps_port=0, ssl_options=TLSSettings(certfile=certfile, keyfile=keyfile))
    try:
        port = node.node.ports["amqps"]
        # A truncated certificate is refused; the first one keeps serving.
        Path(certfile).write_text("-----BEGIN CERTIFICATE-----\nnope\n")
        results: list[tuple[str, str | None]] = []
        wait_for(lambda: results.extend(node.call(node.node.reloader.check)) or results)
        assert results[0][1] is not None
        assert served_serial(port, authority.certfile) == first.serial
        # The poll (every few seconds) picks the good pair up by itself.
        install(second, tmp_path / "live")
        wait_for(lambda: served_serial(port, authority.certfile) == second.serial, timeout=15)
    finally:
        node.stop()
