"""The sans-IO HTTP/1.1 layer: framing, pipelining, limits and response encoding."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from leveret.mgmt.http import ContinueExpected, HttpError, Request, RequestParser, encode_response


def requests_of(events: Sequence[object]) -> list[Request]:
    return [event for event in events if isinstance(event, Request)]


def test_a_request_with_a_body_and_query() -> None:
    raw = (
        b"PUT /api/queues/%2F/q?if-empty=true&x= HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n{}"
    )
    (request,) = requests_of(RequestParser().feed(raw))
    assert (request.method, request.path, request.body) == ("PUT", "/api/queues/%2F/q", b"{}")
    assert request.query == {"if-empty": "true", "x": ""}
    assert request.header("HOST") == "h"
    assert request.keep_alive


def test_pipelined_requests_come_out_in_order() -> None:
    raw = b"GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\nConnection: close\r\n\r\n"
    first, second = requests_of(RequestParser().feed(raw))
    assert (first.path, second.path) == ("/a", "/b")
    assert first.keep_alive and not second.keep_alive


def test_a_request_fed_byte_by_byte() -> None:
    raw = b"POST /x HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello"
    parser = RequestParser()
    found: list[Request] = []
    for index in range(len(raw)):
        found += requests_of(parser.feed(raw[index : index + 1]))
        if index < len(raw) - 1:
            assert not found
    assert [r.body for r in found] == [b"hello"]


def test_chunked_bodies_are_joined() -> None:
    raw = (
        b"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
    )
    parser = RequestParser()
    assert requests_of(parser.feed(raw[:40])) == []
    (request,) = requests_of(parser.feed(raw[40:]))
    assert request.body == b"hello world"


def test_expect_continue_is_announced_once_before_the_body() -> None:
    parser = RequestParser()
    events = parser.feed(b"PUT /x HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n")
    assert events == [ContinueExpected()]
    assert parser.feed(b"a") == []
    (request,) = requests_of(parser.feed(b"bc"))
    assert request.body == b"abc"


def test_http_1_0_closes_unless_asked_to_keep_alive() -> None:
    (plain,) = requests_of(RequestParser().feed(b"GET / HTTP/1.0\r\n\r\n"))
    (kept,) = requests_of(RequestParser().feed(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"))
    assert not plain.keep_alive and kept.keep_alive


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        (b"GARBAGE\r\n\r\n", 400),
        (b"GET /x HTTP/2\r\n\r\n", 400),
        (b"GET /x HTTP/1.1\r\nno colon\r\n\r\n", 400),
        (b"GET /x HTTP/1.1\r\nContent-Length: x\r\n\r\n", 400),
        (b"GET /x HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400),
        (b"GET /x HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
        (b"GET /x HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
        (b"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400),
        (b"GET /x HTTP/1.1\r\nX: " + b"a" * 70000 + b"\r\n\r\n", 431),
    ],
)
def test_malformed_requests_are_refused(raw: bytes, status: int) -> None:
    with pytest.raises(HttpError) as refused:
        RequestParser().feed(raw)
    assert refused.value.status == status


def test_a_body_over_the_limit_is_refused_before_it_arrives() -> None:
    with pytest.raises(HttpError) as refused:
        RequestParser(max_body_bytes=10).feed(b"PUT /x HTTP/1.1\r\nContent-Length: 11\r\n\r\n")
    assert refused.value.status == 413


def test_an_endless_header_is_refused() -> None:
    parser = RequestParser()
    assert parser.feed(b"GET / HTTP/1.1\r\n") == []
    with pytest.raises(HttpError) as refused:
        for _ in range(100):
            parser.feed(b"X-Long: " + b"a" * 1000 + b"\r\n")
    assert refused.value.status == 431


def test_responses_carry_length_and_leave_out_bodies_where_http_says_so() -> None:
    ok = encode_response(200, b'{"a":1}', [("content-type", "application/json")])
    head, _, body = ok.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK\r\n")
    assert b"content-length: 7" in head and body == b'{"a":1}'
    empty = encode_response(204, b"ignored")
    assert b"content-length" not in empty and empty.endswith(b"\r\n\r\n")
    head_only = encode_response(200, b"12345", head_only=True)
    assert b"content-length: 5" in head_only and head_only.endswith(b"\r\n\r\n")
    assert b"connection: close" in encode_response(400, b"", keep_alive=False)


@pytest.mark.parametrize(
    "raw",
    [
        b"AMQP\x00\x00\x09\x01",  # an AMQP client's protocol header
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",  # a TLS client hello
        b"\x00",
        b"GET\t/",
        b"GET /x\x00",
        b"GET /x HTTP/2",
        b"GET /x HTTX",
        b"GET /x HTTP/1.1\n",
        b"GET  /x",
        b" GET",
        b"A" * 21,
    ],
)
def test_bytes_no_request_starts_with_are_refused_at_once(raw: bytes) -> None:
    """No head end has arrived, yet nothing that follows could make these a request."""
    with pytest.raises(HttpError) as refused:
        RequestParser().feed(raw)
    assert refused.value.status == 400


def test_every_prefix_of_a_request_is_waited_for() -> None:
    raw = b"DELETE /api/queues/%2F/q?x=\xe9 HTTP/1.0\r\nHost: h\r\n\r\n"
    for end in range(len(raw)):
        parser = RequestParser()
        assert parser.feed(raw[:end]) == []
        assert parser.head_in_progress == (end > 0)
        (request,) = requests_of(parser.feed(raw[end:]))
        assert request.method == "DELETE" and not parser.head_in_progress


def test_a_pipelined_second_head_is_checked_from_its_own_start() -> None:
    parser = RequestParser()
    (first,) = requests_of(parser.feed(b"POST /a HTTP/1.1\r\nContent-Length: 2\r\n\r\nokGET /b"))
    assert first.body == b"ok" and parser.head_in_progress
    with pytest.raises(HttpError):
        parser.feed(b" HTTP/3")
    parser = RequestParser()
    parser.feed(b"GET /a HTTP/1.1\r\n\r\n")
    assert not parser.head_in_progress
    with pytest.raises(HttpError):
        parser.feed(b"AMQP\x00")
