"""What an API handler receives (the request in context) and returns, and how routes are
declared."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .access import Caller, require_vhost
from .errors import ApiError, bad_request, key_missing_reason, vhost_not_found
from .request import Request

if TYPE_CHECKING:
    from aiohttp import web
    from multidict import CIMultiDict

    from ..broker import Broker
    from ..vhost import VirtualHost
    from .state import ManagementState


# A streamed answer (server-sent events, a websocket): given aiohttp's request and the headers
# every answer carries, it prepares its own response, writes to it until done, and returns it.
Streamer = Callable[["web.BaseRequest", "CIMultiDict[str]"], Awaitable["web.StreamResponse"]]


@dataclass(slots=True)
class Reply:
    status: int = 200
    body: Any = None  # JSON-encodable, or None for no body
    headers: list[tuple[str, str]] = field(default_factory=list)
    raw: bytes | None = None  # a non-JSON body (metrics), sent as is
    content_type: str = "application/json"
    stream: Streamer | None = None  # when set, it answers instead of the fields above


def ok(body: Any) -> Reply:
    return Reply(200, body)


def created_or_updated(created: bool) -> Reply:
    return Reply(201 if created else 204)


NO_CONTENT = 204


@dataclass(slots=True)
class Context:
    broker: Broker
    state: ManagementState
    request: Request
    caller: Caller
    params: dict[str, str]
    peer_host: str

    @property
    def query(self) -> dict[str, str]:
        return self.request.query

    def param(self, name: str) -> str:
        return self.params[name]

    def vhost(self) -> VirtualHost:
        """The vhost named in the path: it must exist (404) and the caller may use it (401)."""
        name = self.params["vhost"]
        require_vhost(self.broker, self.caller, name)
        return self.broker.vhosts[name]

    def vhost_to_write(self) -> VirtualHost:
        """The vhost a declare or a bind goes to: one that does not exist is RabbitMQ's
        `vhost_not_found` (a read of it is the plain 404 of `vhost()`)."""
        if self.params["vhost"] not in self.broker.vhosts:
            raise vhost_not_found()
        return self.vhost()

    def json_body(self, *, required: bool = False) -> dict[str, Any]:
        """The request body as a JSON object; an empty body is {} (RabbitMQ allows that)."""
        body = self.request.body.strip()
        if not body:
            if required:
                raise bad_request("not_json")
            return {}
        try:
            document = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            raise bad_request("not_json") from None
        if not isinstance(document, dict):
            raise bad_request("not_json")
        return document


def truthy(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.lower() == "true")


def body_flag(body: Mapping[str, Any], key: str) -> bool:
    """A boolean of a request body, read as RabbitMQ reads it: true or "true", false or
    "false" (or absent); anything else is a 400 whose reason is `["not_boolean", value]`."""
    value = body.get(key, False)
    if value is True or value == "true":
        return True
    if value is False or value == "false" or value is None:
        return False
    raise ApiError(400, "bad_request", ["not_boolean", value])


def require_keys(document: Mapping[str, Any], *keys: str) -> None:
    """RabbitMQ's answer when a body lacks mandatory keys: `[{key_missing,k},...]`."""
    missing = [key for key in keys if key not in document]
    if missing:
        raise bad_request(key_missing_reason(missing))


# A handler that must wait (for the cluster to decide a change) returns an awaitable reply.
Handler = Callable[[Context], Reply | Awaitable[Reply]]


@dataclass(frozen=True, slots=True)
class Route:
    """A path pattern like `api/queues/{vhost}/{name}` and a handler per HTTP method."""

    pattern: str
    methods: Mapping[str, Handler]
    # Routes answered without credentials (none in the API; /metrics is one).
    public: bool = False

    @property
    def segments(self) -> tuple[str, ...]:
        trimmed = self.pattern.strip("/")
        return tuple(trimmed.split("/")) if trimmed else ()  # "" is the root, `/`


def not_found_unless(condition: bool) -> None:
    if not condition:
        raise ApiError(404, "Object Not Found", "Not Found")
