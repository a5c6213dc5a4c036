"""The management listener over a raw socket: keep-alive, pipelining, 100-continue, bad requests."""

from __future__ import annotations

import base64
import socket

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
            f"PUT /api/queues/%2F/cont HTTP/1.1\r\nHost: x\r\n{AUTH}Content-Type: application/json\r\n"
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
        sock.sendall(f"GET /api/overview HTTP/1.1\r\n{AUTH}Connection: close\r\n\r\n".encode())
        (response,) = read_responses(sock, 1)
        assert response.startswith(b"HTTP/1.1 200 OK")
        assert sock.recv(10) == b""
