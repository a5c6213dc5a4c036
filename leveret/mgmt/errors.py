"""The management API's one error type, RabbitMQ's error bodies, and the map from AMQP errors."""

from __future__ import annotations

from typing import Any

from ..amqp.errors import AMQPError, ReplyCode

REALM = 'Basic realm="RabbitMQ Management"'


class ApiError(Exception):
    """Answered as `{"error": error, "reason": reason}` with `status` (no body when error is
    None)."""

    def __init__(
        self,
        status: int,
        error: str | None,
        reason: Any = "",
        headers: list[tuple[str, str]] | None = None,
    ) -> None:
        super().__init__(f"{status} {error}: {reason}")
        self.status = status
        self.error = error
        self.reason = reason
        self.headers = headers or []

    def body(self) -> dict[str, Any] | None:
        if self.error is None:
            return None
        return {"error": self.error, "reason": self.reason}


_ERLANG_LINE = 80


def key_missing_reason(missing: list[str]) -> str:
    """`[{key_missing,a},{key_missing,b}]`, wrapped as Erlang's ~p wraps long lines."""
    items = [f"{{key_missing,{key}}}" for key in missing]
    flat = "[" + ",".join(items) + "]"
    return flat if len(flat) < _ERLANG_LINE - 2 else "[" + ",\n ".join(items) + "]"


def object_not_found() -> ApiError:
    return ApiError(404, "Object Not Found", "Not Found")


def vhost_not_found() -> ApiError:
    """What RabbitMQ answers a declare or a bind in a vhost that does not exist."""
    return ApiError(404, "not_found", "vhost_not_found")


def bad_request(reason: str) -> ApiError:
    return ApiError(400, "bad_request", reason)


def not_authorised(reason: str) -> ApiError:
    return ApiError(401, "not_authorised", reason)


def login_failed() -> ApiError:
    # RabbitMQ spells this one "authorized" and the tag refusals "authorised".
    return ApiError(401, "not_authorized", "Login failed", [("www-authenticate", REALM)])


def credentials_missing() -> ApiError:
    return ApiError(401, None, "", [("www-authenticate", REALM)])


def method_not_allowed(allowed: list[str]) -> ApiError:
    return ApiError(405, None, "", [("allow", ", ".join(allowed))])


def from_amqp(error: AMQPError) -> ApiError:
    """What RabbitMQ's management plugin answers when the operation behind a request fails."""
    if error.code == ReplyCode.NOT_FOUND:
        return ApiError(404, "not_found", error.text)
    if error.code == ReplyCode.ACCESS_REFUSED:
        # RabbitMQ does not pass the AMQP text on here.
        return not_authorised("Access refused.")
    return bad_request(error.text)
