"""A published message as the node keeps it: raw header bytes, body, and lazily decoded
properties."""

from __future__ import annotations

from typing import Any

from .amqp.fields import DecodeError
from .amqp.frames import shortstr
from .amqp.properties import BasicProperties, decode_properties, encode_header_payload

_DELIVERY_MODE_BIT = 1 << 11  # property flag of delivery_mode (the 5th property)

# basic.deliver's exchange and routing key, encoded, by the pair: most traffic uses few pairs,
# and a lookup costs a fifth of encoding them. Emptied when full (unique keys, as RPC's).
_ENCODED_PAIRS: dict[tuple[str, str], bytes] = {}
_MOST_ENCODED_PAIRS = 4096


class Message:
    """One published message; shared by every queue it is routed to."""

    __slots__ = (
        "_exchange_and_key",
        "_properties",
        "body",
        "exchange",
        "has_flags",
        "header",
        "routing_key",
        "stored_body",
    )

    def __init__(
        self,
        exchange: str,
        routing_key: str,
        header: bytes,
        body: bytes,
        properties: BasicProperties | None = None,
    ) -> None:
        self.exchange = exchange
        self.routing_key = routing_key
        self.header = header  # the content header payload exactly as the publisher sent it
        # Whether any property is set at all (most benchmark traffic has none): read several
        # times per message, so worked out once.
        self.has_flags = len(header) > 14 or header[12:14] != b"\x00\x00"
        self.body = body
        # What queue stores write for the body: the body, or a reference to its one copy in the
        # vhost's shared store when a large body goes to several durable queues.
        self.stored_body: Any = body
        # Given by a maker that already has them decoded (they must match `header`).
        self._properties: BasicProperties | None = properties
        self._exchange_and_key: bytes | None = None

    @property
    def properties(self) -> BasicProperties:
        props = self._properties
        if props is None:
            props = self._properties = decode_properties(self.header)
        return props

    @property
    def exchange_and_key(self) -> bytes:
        """Exchange and routing key encoded once for every delivery of this message."""
        encoded = self._exchange_and_key
        if encoded is None:
            pair = (self.exchange, self.routing_key)
            encoded = _ENCODED_PAIRS.get(pair)
            if encoded is None:
                if len(_ENCODED_PAIRS) >= _MOST_ENCODED_PAIRS:
                    _ENCODED_PAIRS.clear()
                encoded = _ENCODED_PAIRS[pair] = shortstr(pair[0]) + shortstr(pair[1])
            self._exchange_and_key = encoded
        return encoded

    @property
    def persistent(self) -> bool:
        return self.has_flags and self.properties.delivery_mode == 2

    def validate(self) -> None:
        """Decode properties now, so that a malformed header fails the publish, not a delivery."""
        if self.has_flags:
            self.properties  # noqa: B018 - decoding is the check


def check_properties(message: Message) -> str | None:
    """The reason a content header is malformed, or None."""
    try:
        message.validate()
    except DecodeError as exc:
        return str(exc)
    return None


def sender_selected(message: Message) -> tuple[tuple[str, ...], Message]:
    """Sender-selected distribution: the CC and BCC header keys to route by as well, and the
    message as delivered (RabbitMQ removes BCC so that recipients do not see it)."""
    headers = message.properties.headers or {}
    keys: list[str] = []
    for name in ("CC", "BCC"):
        value = headers.get(name)
        if isinstance(value, list):
            keys += [
                v.decode("utf-8", "replace") if isinstance(v, bytes) else v
                for v in value
                if isinstance(v, (str, bytes))
            ]
    if "BCC" not in headers:
        return tuple(keys), message
    properties = message.properties
    properties.headers = {key: value for key, value in headers.items() if key != "BCC"}
    header = encode_header_payload(60, len(message.body), properties.encode())
    return tuple(keys), Message(message.exchange, message.routing_key, header, message.body)
