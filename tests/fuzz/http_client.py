"""A plain HTTP/1.1 client for the management tests: status, headers and raw body, nothing
interpreted, so that the tests judge whatever serves the API."""

from __future__ import annotations

import base64
import http.client
import json
from dataclasses import dataclass
from typing import Any

GUEST = "Basic " + base64.b64encode(b"guest:guest").decode()


@dataclass
class Answer:
    status: int
    body: bytes
    content_type: str

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


def request(
    port: int,
    method: str,
    path: str,
    body: bytes | None = None,
    *,
    authorization: str | None = GUEST,
    content_type: str = "application/json",
    timeout: float = 30.0,
) -> Answer:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        headers = {"content-type": content_type}
        if authorization is not None:
            headers["authorization"] = authorization
        # skip_* : the path goes on the wire exactly as given (%2F and .. included).
        conn.putrequest(method, path, skip_host=False, skip_accept_encoding=True)
        for name, value in headers.items():
            conn.putheader(name, value)
        conn.putheader("content-length", str(len(body or b"")))
        conn.endheaders(body or b"")
        response = conn.getresponse()
        return Answer(response.status, response.read(), response.getheader("content-type", ""))
    finally:
        conn.close()
