"""How `leveret ctl` talks to a node's HTTP API, and the exit codes it ends with (rabbitmqctl's)."""

from __future__ import annotations

import base64
import http.client
import json
import ssl
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from ..sysexits import (  # noqa: F401 - ctl's commands and tests take them from here
    EX_DATAERR,
    EX_NOUSER,
    EX_OK,
    EX_SOFTWARE,
    EX_UNAVAILABLE,
    EX_USAGE,
)


class CtlError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def https_context(cacert: str | None, insecure: bool) -> ssl.SSLContext:
    """The server's certificate checked against `cacert` (or the system's CAs), host name
    included, unless `insecure`, as rabbitmqadmin's --ssl-ca-cert-file and --ssl-insecure."""
    if insecure:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    try:
        return ssl.create_default_context(cafile=cacert)
    except (OSError, ssl.SSLError) as error:
        raise CtlError(EX_USAGE, f"cannot use --cacert {cacert}: {error}") from None


class Client:
    def __init__(
        self,
        url: str,
        timeout: float = 60.0,
        *,
        cacert: str | None = None,
        insecure: bool = False,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise CtlError(
                EX_USAGE,
                f"invalid --url {_without_password(url)!r}: expected "
                "http://user:password@host:port",
            )
        self.url = url
        self.https = parts.scheme == "https"
        if (cacert or insecure) and not self.https:
            raise CtlError(EX_USAGE, "--cacert and --insecure need an https:// --url")
        self._tls = https_context(cacert, insecure) if self.https else None
        self.host = parts.hostname
        self.port = parts.port or (443 if self.https else 15672)
        self.prefix = parts.path.rstrip("/")
        user = parts.username or "guest"
        password = parts.password or "guest"
        self.authorization = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        self.timeout = timeout

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        headers: Mapping[str, str | bytes] | None = None,
        timeout: float | None = None,
    ) -> tuple[int, Any]:
        connection: http.client.HTTPConnection
        if self._tls is not None:
            connection = http.client.HTTPSConnection(
                self.host, self.port, timeout=timeout or self.timeout, context=self._tls
            )
        else:
            connection = http.client.HTTPConnection(
                self.host, self.port, timeout=timeout or self.timeout
            )
        sent: dict[str, str | bytes] = {
            "Authorization": self.authorization,
            "Accept": "application/json",
            **(headers or {}),
        }
        data = None
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            sent["Content-Type"] = "application/json"
        try:
            connection.request(method, self.prefix + path, body=data, headers=sent)
            response = connection.getresponse()
            raw = response.read()
        except OSError as exc:
            raise CtlError(
                EX_UNAVAILABLE,
                f"unable to perform an operation on node at {self.host}:{self.port}: {exc}",
            ) from None
        finally:
            connection.close()
        try:
            payload = json.loads(raw) if raw else None
        except ValueError:
            payload = raw.decode("utf-8", "replace")
        return response.status, payload

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        missing: CtlError | None = None,
        headers: Mapping[str, str | bytes] | None = None,
        timeout: float | None = None,
    ) -> Any:
        """The answer's JSON; errors become CtlError with rabbitmqctl's exit codes."""
        status, payload = self.request(method, path, body, headers=headers, timeout=timeout)
        if status < 300:
            return payload
        reason = payload.get("reason", "") if isinstance(payload, dict) else payload
        if status == 404 and missing is not None:
            raise missing
        if status == 401:
            raise CtlError(EX_UNAVAILABLE, f"not authorised: {reason or 'check the user in --url'}")
        if status == 400 and isinstance(reason, str) and reason.startswith("Validation failed"):
            raise CtlError(EX_DATAERR, reason.strip())
        if isinstance(reason, (list, dict)):
            reason = json.dumps(reason)
        raise CtlError(EX_UNAVAILABLE, f"{reason or 'request failed'} (HTTP {status})")


def _without_password(url: str) -> str:
    """`url` with its password left out, so that errors never show it."""
    head, at, tail = url.rpartition("@")
    if not at:
        return url
    scheme, sep, credentials = head.partition("://")
    user = credentials.split(":", 1)[0]
    return f"{scheme}{sep}{user}:***@{tail}" if sep else f"{user}:***@{tail}"
