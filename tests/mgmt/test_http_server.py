"""The management listener over a raw socket: keep-alive, pipelining, 100-continue, bad requests."""

from __future__ import annotations

import base64
import socket
import time

import pika
import pytest

from leveret.mgmt.server import REQUEST_HEAD_TIMEOUT_SECONDS
from tests.mgmt.conftest import ManagedNode

AUTH = "Authorization: Basic " + base64.b64encode(b"guest:guest").decode() + "\r\n"


def read_responses(sock: socket.socket, count: int) -> list[bytes]:
    """Read `count` responses that each carry a content-length (bounded by the socket timeout)."""
    data = b""
    responses: list[bytes] = []
    while len(responses) < count:
        head_end = data.find(b"\r\n\r\n")
        if head_end >= 0:
            head = data[:head_end].decode("latin-1").lower()
            length = 0
            for line in head.split("\r\n")[1:]:
                if line.startswith("content-length:"):
                    length = int(line.split(":", 1)[1])
            end = head_end + 4 + length
            if len(data) >= end:
                responses.append(data[:end])
                data = data[end:]
                continue
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return responses


def connect(managed: ManagedNode) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", managed.mgmt_port), timeout=10)
    return sock


def test_pipelined_requests_on_one_connection(managed: ManagedNode) -> None:
    with connect(managed) as sock:
        request = f"GET /api/whoami HTTP/1.1\r\nHost: x\r\n{AUTH}\r\n".encode()
        sock.sendall(request * 3)
        responses = read_responses(sock, 3)
    assert len(responses) == 3
    assert all(
        r.startswith(b"HTTP/1.1 200 OK") and r.endswith(b'"tags":["administrator"]}')
        for r in responses
    )


def test_expect_100_continue_then_the_body(managed: ManagedNode) -> None:
    body = b'{"durable": true}'
    with connect(managed) as sock:
        sock.sendall(
            f"PUT /api/queues/%2F/cont HTTP/1.1\r\nHost: x\r\n{AUTH}"
            "Content-Type: application/json\r\n"
            f"Expect: 100-continue\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        )
        assert sock.recv(100) == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(body)
        (response,) = read_responses(sock, 1)
    assert response.startswith(b"HTTP/1.1 201 Created")
    assert managed.api.get("/api/queues/%2F/cont")["durable"] is True


def test_a_malformed_request_gets_400_and_the_connection_closes(managed: ManagedNode) -> None:
    with connect(managed) as sock:
        sock.sendall(b"NOT HTTP AT ALL\r\n\r\n")
        (response,) = read_responses(sock, 1)
        assert response.startswith(b"HTTP/1.1 400 Bad Request")
        assert b"connection: close" in response
        assert sock.recv(10) == b""


def test_connection_close_is_honoured(managed: ManagedNode) -> None:
    with connect(managed) as sock:
        sock.sendall(
            f"GET /api/overview HTTP/1.1\r\nHost: x\r\n{AUTH}Connection: close\r\n\r\n".encode()
        )
        (response,) = read_responses(sock, 1)
        assert response.startswith(b"HTTP/1.1 200 OK")
        assert sock.recv(10) == b""


# Well under the head timeout, so an answer within it comes from the bytes, not from a clock.
PROMPTLY = 2.0


def test_an_amqp_header_gets_400_at_once(managed: ManagedNode) -> None:
    with socket.create_connection(("127.0.0.1", managed.mgmt_port), timeout=PROMPTLY) as sock:
        sock.sendall(b"AMQP\x00\x00\x09\x01")
        (response,) = read_responses(sock, 1)
        assert response.startswith(b"HTTP/1.1 400 Bad Request")
        assert b"connection: close" in response
        assert sock.recv(10) == b""


def test_garbage_gets_400_at_once(managed: ManagedNode) -> None:
    with socket.create_connection(("127.0.0.1", managed.mgmt_port), timeout=PROMPTLY) as sock:
        sock.sendall(b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03")
        (response,) = read_responses(sock, 1)
        assert response.startswith(b"HTTP/1.1 400 Bad Request")


def test_an_amqp_client_on_the_management_port_fails_fast(managed: ManagedNode) -> None:
    """pika hears HTTP instead of connection.start and gives up, well before its own timeouts."""
    params = pika.ConnectionParameters(
        "127.0.0.1",
        managed.mgmt_port,
        heartbeat=0,
        connection_attempts=1,
        socket_timeout=30,
        stack_timeout=30,
        blocked_connection_timeout=30,
    )
    started = time.monotonic()
    with pytest.raises(pika.exceptions.AMQPConnectionError) as failed:
        pika.BlockingConnection(params)
    assert time.monotonic() - started < REQUEST_HEAD_TIMEOUT_SECONDS, failed.value


def test_a_slowloris_is_cut_and_others_are_served_meanwhile(managed: ManagedNode) -> None:
    cut = False
    with socket.create_connection(("127.0.0.1", managed.mgmt_port), timeout=1.0) as slow:
        slow.sendall(b"GET /api/overview HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        started = time.monotonic()
        # One header byte a second; each recv waits up to a second for the node to give up.
        for _ in range(int(REQUEST_HEAD_TIMEOUT_SECONDS) + 10):
            try:
                slow.sendall(b"a")
            except OSError:
                cut = True
                break
            try:
                answer = slow.recv(65536)
            except TimeoutError:
                with connect(managed) as other:
                    other.sendall(f"GET /api/whoami HTTP/1.1\r\nHost: x\r\n{AUTH}\r\n".encode())
                    (served,) = read_responses(other, 1)
                assert served.startswith(b"HTTP/1.1 200 OK")
                continue
            assert answer.startswith(b"HTTP/1.1 408 Request Timeout"), answer
            cut = True
            break
        elapsed = time.monotonic() - started
    assert cut, "the node kept a trickling request head open"
    assert elapsed >= REQUEST_HEAD_TIMEOUT_SECONDS - 0.5
    # The node is still there for everyone else.
    assert managed.api.get("/api/whoami")["name"] == "guest"
