"""The byte relay passes a client's bytes to its target and the target's back, in order."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from pathlib import Path


def _echo_server() -> tuple[socket.socket, threading.Thread]:
    """A loopback server that sends back, upper-cased, whatever its one client sends."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            while data := conn.recv(65536):
                conn.sendall(data.upper())

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return server, thread


def test_the_relay_carries_bytes_both_ways() -> None:
    server, thread = _echo_server()
    relay = subprocess.Popen(
        [sys.executable, "-m", "bench.relay", str(server.getsockname()[1])],
        stdout=subprocess.PIPE,
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        assert relay.stdout is not None
        port = int(relay.stdout.readline())
        with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
            sent = b"".join(b"message %d;" % n for n in range(2000))
            client.sendall(sent)  # (sent before the relay has reached the target, in part)
            received = b""
            while len(received) < len(sent):
                chunk = client.recv(65536)
                assert chunk, "the relay closed early"
                received += chunk
        assert received == sent.upper()
    finally:
        relay.kill()
        relay.wait()
        server.close()
        thread.join(5)
