"""Admission on the AMQPS listener, against a node process: failed TLS handshakes count against
their address, whose new connections then wait before their TLS handshake (the costliest part
of a connection); a client of another address completes its handshake and logs in at once."""

from __future__ import annotations

import contextlib
import socket
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hostile.clients import connect, handshake
from tests.support.certs import Authority
from tests.support.node import NodeProcess

FAILURES, RATE = 20, 2
NOT_TLS = b"GET / HTTP/1.0\r\n\r\n"


@pytest.fixture(scope="module")
def tls_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[NodeProcess, Authority]]:
    directory = tmp_path_factory.mktemp("admission-tls")
    authority = Authority(directory / "ca")
    server = authority.server()
    config = directory / "leveret.toml"
    config.write_text(
        f"amqps_port = 0\n[admission]\nfailures = {FAILURES}\nrate = {RATE}\nmax_held = 10\n"
        f'[ssl_options]\ncertfile = "{server.certfile}"\nkeyfile = "{server.keyfile}"\n'
    )
    with NodeProcess(extra_args=["--config", str(config)]) as running:
        yield running, authority


def _refused_handshake(port: int, source: str) -> None:
    """Bytes that are not TLS: the node refuses the handshake and closes the socket."""
    with connect(port, source=source) as sock:
        sock.sendall(NOT_TLS)
        with contextlib.suppress(OSError):
            while sock.recv(4096):
                pass


def _answered(sock: socket.socket, timeout: float) -> bool:
    """Whether the node reacts (refuses, answering or closing) within `timeout`."""
    sock.settimeout(timeout)
    try:
        sock.recv(4096)
    except TimeoutError:
        return False
    except OSError:
        return True
    return True


def _tls_login(port: int, authority: Authority, source: str, timeout: float = 5.0) -> None:
    context = ssl.create_default_context(cafile=authority.certfile)
    sock = connect(port, timeout=timeout, source=source)
    with context.wrap_socket(sock, server_hostname="localhost") as tls:
        handshake(tls)  # type: ignore[arg-type]


def test_failed_tls_handshakes_slow_their_address_before_its_next_handshakes(
    tls_node: tuple[NodeProcess, Authority],
) -> None:
    node, authority = tls_node
    port = node.ports["amqps"]
    for _ in range(FAILURES + 3):
        _refused_handshake(port, "127.0.0.11")
    socks = [connect(port, source="127.0.0.11") for _ in range(8)]
    try:
        for sock in socks:
            with contextlib.suppress(OSError):
                sock.sendall(NOT_TLS)
        answered = [_answered(sock, 0.05) for sock in socks]
        assert not all(answered), answered
    finally:
        for sock in socks:
            sock.close()
    # A client of the slowed address waits its turn, then its handshake (the ClientHello it
    # sent while it waited) goes through.
    _tls_login(port, authority, "127.0.0.11", timeout=20.0)
    # Another address is not slowed: its TLS clients log in as usual.
    for _ in range(5):
        _tls_login(port, authority, "127.0.0.12")


def test_the_amqps_listener_still_serves_its_clients(
    tls_node: tuple[NodeProcess, Authority], tmp_path: Path
) -> None:
    node, authority = tls_node
    for _ in range(3):
        _tls_login(node.ports["amqps"], authority, "127.0.0.13")
