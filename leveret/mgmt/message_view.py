"""Messages over HTTP: a fetched message as JSON, and a published one from JSON."""

from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING, Any

from ..amqp.properties import BasicProperties, encode_header_payload
from ..message import Message
from .errors import bad_request
from .json_values import jsonable

if TYPE_CHECKING:
    from ..queues.entry import QueueEntry

BASIC_CLASS = 60
_TEXT_PROPERTIES = (
    "content_type",
    "content_encoding",
    "correlation_id",
    "reply_to",
    "expiration",
    "message_id",
    "type",
    "user_id",
    "app_id",
    "cluster_id",
)
_OCTET_PROPERTIES = ("delivery_mode", "priority")


def _payload(body: bytes, encoding: str) -> tuple[str, str]:
    if encoding == "auto":
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:
            return text, "string"
    return base64.b64encode(body).decode("ascii"), "base64"


def message_json(
    entry: QueueEntry, remaining: int, encoding: str, truncate: int | None
) -> dict[str, Any]:
    message = entry.message
    body = message.body
    shown_body = body[:truncate] if truncate is not None else body
    payload, payload_encoding = _payload(shown_body, encoding)
    properties = message.properties.as_dict() if message.has_flags else {}
    return {
        "payload_bytes": len(body),
        "redelivered": entry.redelivered,
        "exchange": message.exchange,
        "routing_key": message.routing_key,
        "message_count": remaining,
        "properties": jsonable(properties),
        "payload": payload,
        "payload_encoding": payload_encoding,
    }


def properties_from_json(document: Any) -> BasicProperties:
    """BasicProperties from the `properties` object of a publish request."""
    if not isinstance(document, dict):
        raise bad_request("properties should be an object")
    properties = BasicProperties()
    for name in _TEXT_PROPERTIES:
        value = document.get(name)
        if value is None:
            continue
        if not isinstance(value, str):
            raise bad_request(f"invalid property {name}: {value!r}")
        setattr(properties, name, value)
    for name in _OCTET_PROPERTIES:
        value = document.get(name)
        if value is None:
            continue
        if isinstance(value, str) and value.isdigit():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 255:
            raise bad_request(f"invalid property {name}: {value!r}")
        setattr(properties, name, value)
    timestamp = document.get("timestamp")
    if timestamp is not None:
        if not isinstance(timestamp, int) or isinstance(timestamp, bool) or timestamp < 0:
            raise bad_request(f"invalid property timestamp: {timestamp!r}")
        properties.timestamp = timestamp
    headers = document.get("headers")
    if headers is not None:
        if not isinstance(headers, dict):
            raise bad_request("invalid property headers: should be an object")
        properties.headers = headers
    return properties


def message_from_json(
    exchange: str, routing_key: str, properties: BasicProperties, payload: str, encoding: str
) -> Message:
    if encoding == "string":
        body = payload.encode("utf-8")
    elif encoding == "base64":
        try:
            body = base64.b64decode(payload, validate=True)
        except (binascii.Error, ValueError):
            raise bad_request("payload is not valid base64") from None
    else:
        raise bad_request(f"Unsupported payload_encoding {encoding}")
    header = encode_header_payload(BASIC_CLASS, len(body), properties.encode())
    return Message(exchange, routing_key, header, body)
