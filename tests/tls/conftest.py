"""A certificate authority per test, and nodes with an AMQPS listener configured from it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from leveret.tls import TLSSettings
from tests.support.certs import Authority, Issued
from tests.support.node import InProcessNode


@pytest.fixture
def authority(tmp_path: Path) -> Authority:
    return Authority(tmp_path / "ca")


@pytest.fixture
def server_cert(authority: Authority) -> Issued:
    return authority.server()


def peer_checking(authority: Authority, server: Issued, *, required: bool) -> TLSSettings:
    return TLSSettings(
        cacertfile=authority.certfile,
        certfile=server.certfile,
        keyfile=server.keyfile,
        verify="verify_peer",
        fail_if_no_peer_cert=required,
    )


@pytest.fixture
def tls_node(authority: Authority, server_cert: Issued) -> Iterator[InProcessNode]:
    """A node whose AMQPS listener requires a client certificate from `authority`."""
    running = InProcessNode(
        amqps_port=0, ssl_options=peer_checking(authority, server_cert, required=True)
    )
    try:
        yield running
    finally:
        running.stop()
