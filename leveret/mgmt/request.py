"""A management request as handlers see it: method, path, query, headers and the whole body."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qsl


@dataclass(slots=True)
class Request:
    method: str
    target: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]  # names in lower case; repeated fields joined with ", "
    body: bytes = b""

    @classmethod
    def of(cls, method: str, target: str, headers: dict[str, str], body: bytes = b"") -> Request:
        """A request for `target` as sent (path still percent-encoded, query unparsed)."""
        path, _, query_text = target.partition("?")
        query = dict(parse_qsl(query_text, keep_blank_values=True))
        return cls(method, target, path, query, headers, body)

    def header(self, name: str, default: str = "") -> str:
        return self.headers.get(name.lower(), default)
