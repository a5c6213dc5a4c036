"""Node-to-node mutual TLS reloads with the node's other certificates: gRPC and data ports."""

from __future__ import annotations

import shutil
import signal
import socket
import ssl
from pathlib import Path

import pika
from cryptography import x509

from tests.support.certs import Authority, Issued
from tests.support.node import NodeProcess, wait_for


def served_serial(port: int, authority: Authority, client: Issued) -> int:
    """The serial of the certificate a new mutual-TLS handshake on `port` gets (gRPC's h2)."""
    context = ssl.create_default_context(cafile=authority.certfile)
    context.load_cert_chain(client.certfile, client.keyfile)
    context.set_alpn_protocols(["h2"])
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname="localhost") as wrapped,
    ):
        der = wrapped.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number


def node_config(directory: Path, authority: Authority, issued: Issued) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    cert, key = directory / "node.crt", directory / "node.key"
    shutil.copy(issued.certfile, cert)
    shutil.copy(issued.keyfile, key)
    config = directory / "leveret.toml"
    config.write_text(
        f'cluster_tls_cert = "{cert}"\ncluster_tls_key = "{key}"\n'
        f'cluster_tls_ca = "{authority.certfile}"\n'
    )
    return config


def test_cluster_certificates_reload_on_sighup_and_the_cluster_goes_on(tmp_path: Path) -> None:
    authority = Authority(tmp_path / "ca")
    first, second = authority.server("a-first"), authority.server("a-second")
    other = authority.server("b")
    a_config = node_config(tmp_path / "a", authority, first)
    b_config = node_config(tmp_path / "b", authority, other)
    a = NodeProcess(extra_args=["--node-name", "a@localhost", "--config", str(a_config)])
    b: NodeProcess | None = None
    try:
        a.start()
        assert served_serial(a.ports["cluster"], authority, other) == first.serial
        assert served_serial(a.ports["data"], authority, other) == first.serial
        shutil.copy(second.certfile, tmp_path / "a" / "node.crt")
        shutil.copy(second.keyfile, tmp_path / "a" / "node.key")
        assert a.proc is not None
        a.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: "TLS certificate of node-to-node TLS reloaded" in a.log_tail(200))
        wait_for(lambda: served_serial(a.ports["cluster"], authority, other) == second.serial)
        assert served_serial(a.ports["data"], authority, other) == second.serial
        # A node joining now meets the new certificate, and the cluster works through it.
        b = NodeProcess(
            extra_args=[
                "--node-name", "b@localhost", "--config", str(b_config),
                "--join", f"127.0.0.1:{a.ports['cluster']}",
            ]
        ).start()  # fmt: skip
        with pika.BlockingConnection(pika.URLParameters(b.url)) as conn:
            conn.channel().queue_declare("across-tls", durable=True)
        with pika.BlockingConnection(pika.URLParameters(a.url)) as conn:
            ok = conn.channel().queue_declare("across-tls", passive=True)
            assert ok.method.queue == "across-tls"
    finally:
        for node in (b, a):
            if node is not None:
                node.cleanup()
