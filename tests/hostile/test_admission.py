"""Admission against a node process: an address whose connections fail gets new ones slowly,
beyond a bound they are reset, and addresses that behave, probes, and the established
connections of a slowed address are not slowed at all.

The node counts 20 failures a minute before it slows an address, then admits 2 new connections
a second from it and holds 10 at most. Each test connects from addresses of its own (any
127.x.y.z is this host's), so that what one marks does not slow another.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from leveret.amqp import methods as m
from leveret.amqp.constants import PROTOCOL_HEADER
from leveret.amqp.frames import method_frame
from leveret.sysexits import EX_CONFIG
from tests.hostile.clients import (
    RoundTrips,
    connect,
    handshake,
    open_fds,
    read_close,
    read_frame,
    rss_bytes,
)
from tests.support.node import NodeProcess, wait_for

FAILURES, RATE, MAX_HELD = 20, 2, 10
OVERSIZED = method_frame(1, m.BasicPublish(routing_key="q"))[7:-1] + b"\x00" * 10_000


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeProcess]:
    config = tmp_path_factory.mktemp("admission") / "leveret.toml"
    config.write_text(
        f"[admission]\nfailures = {FAILURES}\nwindow = 60\nrate = {RATE}\nmax_held = {MAX_HELD}\n"
    )
    with NodeProcess(extra_args=["--config", str(config)]) as running:
        yield running


def _fail(port: int, source: str) -> None:
    """One connection that ends in 501 frame_too_large, as a client sending oversized frames."""
    with connect(port, source=source) as sock:
        handshake(sock, frame_max=4096)
        sock.sendall(struct.pack(">BHI", 1, 1, len(OVERSIZED)) + OVERSIZED + b"\xce")
        close = read_close(sock)
        assert close is not None and close.reply_code == 501


def _mark(port: int, source: str) -> None:
    # A few more than FAILURES: the node counts a failure when it sees the socket close, which
    # may come after it has accepted the next connection.
    for _ in range(FAILURES + 3):
        _fail(port, source)


def _open_with_header(port: int, source: str, count: int) -> list[socket.socket | None]:
    """`count` connections from `source`, each sent the protocol header; None for one the node
    reset before it was open (a connect sees the reset when it comes that early)."""
    socks = [_open(port, source) for _ in range(count)]
    for sock in socks:
        if sock is not None:
            with contextlib.suppress(OSError):  # reset already: _started tells
                sock.sendall(PROTOCOL_HEADER)
    return socks


def _open(port: int, source: str) -> socket.socket | None:
    try:
        return connect(port, source=source)
    except ConnectionResetError:
        return None


def _started(sock: socket.socket | None, timeout: float) -> bool:
    """Whether the node answered the protocol header (connection.start) within `timeout`."""
    if sock is None:
        return False
    sock.settimeout(timeout)
    try:
        frame = read_frame(sock)
    except OSError:
        return False
    return frame is not None and frame[0] == 1


def _close_all(socks: list[socket.socket | None]) -> None:
    for sock in socks:
        if sock is not None:
            sock.close()


def test_an_address_whose_connections_fail_is_slowed(node: NodeProcess) -> None:
    port = node.ports["amqp"]
    _mark(port, "127.0.0.2")
    opened = time.monotonic()
    socks = _open_with_header(port, "127.0.0.2", 8)
    try:
        first = _started(socks[0], 5.0)
        quick = sum(_started(sock, 0.05) for sock in socks[1:])
        elapsed = time.monotonic() - opened
        assert first
        # A second's worth of tokens at once, then RATE a second: the rest wait, unread.
        assert 1 + quick <= RATE + RATE * elapsed + 1, (quick, elapsed)
        assert 1 + quick < len(socks)
        # Held, not dropped: each gets its turn.
        assert all(_started(sock, 10.0) for sock in socks if sock.gettimeout() == 0.05)
    finally:
        _close_all(socks)


def test_refused_logins_count_as_failures(node: NodeProcess) -> None:
    port = node.ports["amqp"]
    wrong = method_frame(
        0,
        m.ConnectionStartOk(
            {"capabilities": {"authentication_failure_close": True}},
            "PLAIN",
            b"\x00guest\x00wrong",
            "en_US",
        ),
    )
    for _ in range(FAILURES + 3):
        with connect(port, source="127.0.0.8") as sock:
            sock.sendall(PROTOCOL_HEADER)
            read_frame(sock)  # connection.start
            sock.sendall(wrong)
            close = read_close(sock)
            assert close is not None and close.reply_code == 403
    socks = _open_with_header(port, "127.0.0.8", 8)
    try:
        assert not all(_started(sock, 0.05) for sock in socks)
    finally:
        _close_all(socks)


def test_an_address_that_behaves_is_not_slowed_however_fast_it_connects(
    node: NodeProcess,
) -> None:
    port = node.ports["amqp"]
    _mark(port, "127.0.0.3")  # another address's failures do not count against this one
    for _ in range(3):  # more connections than a slowed address would get in many seconds
        socks = [connect(port, source="127.0.0.4") for _ in range(30)]
        try:
            for sock in socks:
                handshake(sock)
            for sock in socks:
                sock.sendall(method_frame(0, m.ConnectionClose(200, "bye", 0, 0)))
                assert _closed_ok(sock)
        finally:
            _close_all(socks)
    socks = _open_with_header(port, "127.0.0.4", 30)
    try:
        assert all(_started(sock, 5.0) for sock in socks)
    finally:
        _close_all(socks)


def _closed_ok(sock: socket.socket) -> bool:
    while (frame := read_frame(sock)) is not None:
        if frame[0] == 1 and isinstance(m.decode_method(frame[2]), m.ConnectionCloseOk):
            return True
    return False


def test_probes_that_send_nothing_do_not_count(node: NodeProcess) -> None:
    port = node.ports["amqp"]
    for _ in range(3 * FAILURES):  # a load balancer's TCP health checks
        connect(port, source="127.0.0.5").close()
    socks = _open_with_header(port, "127.0.0.5", 20)
    try:
        assert all(_started(sock, 5.0) for sock in socks)
    finally:
        _close_all(socks)


def test_beyond_max_held_new_connections_are_reset(node: NodeProcess) -> None:
    port = node.ports["amqp"]
    _mark(port, "127.0.0.6")
    socks = _open_with_header(port, "127.0.0.6", 40)
    try:
        started = [_started(sock, 10.0) for sock in socks]
        # Admitted at once, or held and admitted in turn; the rest were reset.
        admitted = sum(started)
        assert MAX_HELD <= admitted <= MAX_HELD + 3 * RATE, started
        assert not all(started[-10:])
    finally:
        _close_all(socks)


def test_an_established_client_of_a_slowed_address_keeps_being_served(
    node: NodeProcess,
) -> None:
    port = node.ports["amqp"]
    client = RoundTrips(node.url)  # from 127.0.0.1, connected before the address is marked
    try:
        _mark(port, "127.0.0.1")
        socks = _open_with_header(port, "127.0.0.1", 8)
        try:
            assert client.count(0.5) > 0
            # The address is slowed meanwhile: not every new connection has been answered.
            assert not all(_started(sock, 0.05) for sock in socks)
            assert client.count(0.5) > 0
        finally:
            _close_all(socks)
    finally:
        client.close()


def test_a_slowed_address_churning_leaves_no_memory_or_descriptors_behind(
    node: NodeProcess,
) -> None:
    pid = node.proc.pid  # type: ignore[union-attr]
    port = node.ports["amqp"]
    _mark(port, "127.0.0.7")
    idle_rss, idle_fds = rss_bytes(pid), open_fds(pid)
    deadline = time.monotonic() + 60
    for _ in range(2000):  # held, reset, or given up while waiting
        assert time.monotonic() < deadline
        with contextlib.suppress(OSError), connect(port, source="127.0.0.7") as sock:
            sock.sendall(PROTOCOL_HEADER)
    # Failures from many addresses: each is tracked, within the node's bound.
    for index in range(300):
        source = f"127.1.{index // 250}.{index % 250 + 1}"
        with connect(port, source=source) as sock:
            sock.sendall(PROTOCOL_HEADER[:5])
    wait_for(lambda: open_fds(pid) <= idle_fds + 5, timeout=30)
    assert rss_bytes(pid) < idle_rss + 30 * 1024 * 1024
    assert round_trips_served(node)


def round_trips_served(node: NodeProcess) -> bool:
    client = RoundTrips(node.url)
    try:
        return client.count(0.2) > 0
    finally:
        client.close()


def test_a_bad_admission_value_stops_the_start(tmp_path: Path) -> None:
    config = tmp_path / "leveret.toml"
    config.write_text("[admission]\nrate = 0\n")
    done = subprocess.run(
        [sys.executable, "-m", "leveret", "server", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == EX_CONFIG
    assert "admission_rate = 0" in done.stderr
