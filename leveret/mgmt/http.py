"""Sans-IO HTTP/1.1 for the management listener: bytes in, requests out; responses to bytes."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from email.utils import formatdate
from http import HTTPStatus
from urllib.parse import parse_qsl

MAX_HEADER_BYTES = 64 * 1024
# Definitions of a large broker can be big; anything beyond this is refused with 413.
MAX_BODY_BYTES = 64 * 1024 * 1024
_MAX_HEADERS = 100
# Longer than any method HTTP defines: a longer run of letters is some other protocol.
_MAX_METHOD_BYTES = 20
_METHOD_RUN = re.compile(rb"[A-Za-z]*")
# Anything visible (raw non-ASCII included, as the full parse accepts it) up to the next space.
_TARGET_RUN = re.compile(rb"[^\x00-\x20\x7f]*")
# What follows the target, byte by byte; "#" stands for any digit.
_VERSION_AND_END = b"HTTP/1.#\r\n"


class HttpError(Exception):
    """The peer broke HTTP: answer with this status and close the connection."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(text)
        self.status = status
        self.text = text


@dataclass(slots=True)
class Request:
    method: str
    target: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes = b""
    keep_alive: bool = True

    def header(self, name: str, default: str = "") -> str:
        return self.headers.get(name.lower(), default)


@dataclass(slots=True)
class ContinueExpected:
    """The client waits for `100 Continue` before it sends the body (curl does for large ones)."""


@dataclass(slots=True)
class _Head:
    method: str
    target: str
    version: str
    headers: dict[str, str] = field(default_factory=dict)


class _RequestLineCheck:
    """Follows a request line as it arrives, so that bytes no HTTP request can start with (an
    AMQP protocol header, a TLS hello) are refused at once instead of when a head that will
    never come is complete. Each byte is looked at once, however the line is split."""

    def __init__(self) -> None:
        self.scanned = 0
        self.done = False
        self._part = 0  # 0: method, 1: target, 2: version and line end
        self._length = 0  # bytes of the current part seen so far

    def check(self, buffer: bytearray) -> None:
        """Look at the bytes of `buffer` (which starts with the line) not seen before."""
        while not self.done and self.scanned < len(buffer):
            if self._part < 2:
                run = (_METHOD_RUN if self._part == 0 else _TARGET_RUN).match(buffer, self.scanned)
                assert run is not None  # both patterns match the empty string
                self._length += run.end() - self.scanned
                self.scanned = run.end()
                if self._part == 0 and self._length > _MAX_METHOD_BYTES:
                    raise HttpError(400, "malformed request line")
                if self.scanned == len(buffer):
                    return
                if buffer[self.scanned] != 0x20 or self._length == 0:
                    raise HttpError(400, "malformed request line")
                self.scanned += 1
                self._part += 1
                self._length = 0
                continue
            byte = buffer[self.scanned]
            expected = _VERSION_AND_END[self._length]
            if not (0x30 <= byte <= 0x39 if expected == 0x23 else byte == expected):
                raise HttpError(400, "malformed request line")
            self.scanned += 1
            self._length += 1
            self.done = self._length == len(_VERSION_AND_END)


class RequestParser:
    """Splits a byte stream into requests; pipelined requests come out in order."""

    def __init__(self, max_body_bytes: int = MAX_BODY_BYTES) -> None:
        self._buffer = bytearray()
        self._head: _Head | None = None
        self._line = _RequestLineCheck()
        self._max_body = max_body_bytes
        self._continue_sent = False

    @property
    def head_in_progress(self) -> bool:
        """Part of a request head has arrived but not all of it."""
        return self._head is None and bool(self._buffer)

    def feed(self, data: bytes) -> list[Request | ContinueExpected]:
        """Take received bytes; return the requests (and 100-continue cues) now complete."""
        self._buffer += data
        events: list[Request | ContinueExpected] = []
        while True:
            if self._head is None:
                self._line.check(self._buffer)
                end = self._buffer.find(b"\r\n\r\n")
                if end < 0:
                    if len(self._buffer) > MAX_HEADER_BYTES:
                        raise HttpError(431, "request header fields too large")
                    return events
                if end > MAX_HEADER_BYTES:
                    raise HttpError(431, "request header fields too large")
                self._head = _parse_head(bytes(self._buffer[:end]))
                del self._buffer[: end + 4]
                self._line = _RequestLineCheck()
                self._continue_sent = False
            body = self._take_body(self._head)
            if body is None:
                if (
                    self._head.headers.get("expect", "").lower() == "100-continue"
                    and not self._continue_sent
                ):
                    self._continue_sent = True
                    events.append(ContinueExpected())
                return events
            events.append(_request(self._head, body))
            self._head = None

    def _take_body(self, head: _Head) -> bytes | None:
        """The body if all of it has arrived (removed from the buffer), else None."""
        encoding = head.headers.get("transfer-encoding", "").lower()
        if encoding:
            if encoding != "chunked":
                raise HttpError(501, f"transfer-encoding {encoding} is not supported")
            return self._take_chunked()
        length_text = head.headers.get("content-length", "0").strip()
        if not length_text.isdigit():
            raise HttpError(400, "invalid content-length")
        length = int(length_text)
        if length > self._max_body:
            raise HttpError(413, "request body too large")
        if len(self._buffer) < length:
            return None
        body = bytes(self._buffer[:length])
        del self._buffer[:length]
        return body

    def _take_chunked(self) -> bytes | None:
        chunks: list[bytes] = []
        offset = 0
        total = 0
        buffer = self._buffer
        while True:
            line_end = buffer.find(b"\r\n", offset)
            if line_end < 0:
                if len(buffer) - offset > 1024:
                    raise HttpError(400, "chunk size line too long")
                return None
            size_text = bytes(buffer[offset:line_end]).split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise HttpError(400, "invalid chunk size") from None
            total += size
            if total > self._max_body:
                raise HttpError(413, "request body too large")
            start = line_end + 2
            if size == 0:
                # Trailers (ignored) end with an empty line.
                trailer_end = buffer.find(b"\r\n\r\n", line_end)
                if trailer_end < 0:
                    return None
                del buffer[: trailer_end + 4]
                return b"".join(chunks)
            if len(buffer) < start + size + 2:
                return None
            chunks.append(bytes(buffer[start : start + size]))
            offset = start + size + 2


def _parse_head(raw: bytes) -> _Head:
    try:
        text = raw.decode("latin-1")
    except UnicodeDecodeError:  # pragma: no cover - latin-1 decodes every byte
        raise HttpError(400, "undecodable request head") from None
    lines = text.split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise HttpError(400, "malformed request line")
    method, target, version = parts
    if not method.isalpha() or not target:
        raise HttpError(400, "malformed request line")
    head = _Head(method.upper(), target, version)
    if len(lines) - 1 > _MAX_HEADERS:
        raise HttpError(431, "too many header fields")
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip():
            raise HttpError(400, "malformed header field")
        key = name.lower()
        value = value.strip()
        if key in head.headers:
            if key == "content-length" and head.headers[key] != value:
                raise HttpError(400, "conflicting content-length")
            head.headers[key] = f"{head.headers[key]}, {value}"
        else:
            head.headers[key] = value
    if "transfer-encoding" in head.headers and "content-length" in head.headers:
        # Both at once is how request smuggling starts; refuse it.
        raise HttpError(400, "both transfer-encoding and content-length")
    return head


def _request(head: _Head, body: bytes) -> Request:
    path, _, query_text = head.target.partition("?")
    connection = head.headers.get("connection", "").lower()
    keep_alive = (
        "close" not in connection if head.version == "HTTP/1.1" else "keep-alive" in connection
    )
    query = dict(parse_qsl(query_text, keep_blank_values=True))
    return Request(head.method, head.target, path, query, head.headers, body, keep_alive)


def encode_response(
    status: int,
    body: bytes = b"",
    headers: list[tuple[str, str]] | None = None,
    *,
    keep_alive: bool = True,
    head_only: bool = False,
) -> bytes:
    """A full response; the body is left out for HEAD, 204 and 304 but its length is kept."""
    reason = _reason(status)
    lines = [f"HTTP/1.1 {status} {reason}", f"date: {formatdate(usegmt=True)}", "server: Leveret"]
    for name, value in headers or ():
        lines.append(f"{name}: {value}")
    bodiless = status in (204, 304) or 100 <= status < 200
    if not bodiless:
        lines.append(f"content-length: {len(body)}")
    if not keep_alive:
        lines.append("connection: close")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    if bodiless or head_only:
        return head
    return head + body


CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"
