"""A message as a federation link forwards it: RabbitMQ's hop headers, then the local Message."""

from __future__ import annotations

from typing import Any

from leveret.amqp.properties import decode_properties, encode_header_payload
from leveret.message import Message

_BASIC_CLASS = 60


class Hop:
    """What a link stamps on each message it forwards: the upstream it came from."""

    __slots__ = ("queue", "trust_user_id", "uri")

    def __init__(self, uri: str, queue: str, trust_user_id: bool) -> None:
        self.uri = uri  # without credentials
        self.queue = queue
        self.trust_user_id = trust_user_id

    def message(
        self,
        exchange: str,
        routing_key: str,
        redelivered: bool,
        header: bytes,
        body: bytes,
    ) -> Message:
        """The local message for an upstream delivery (`header`: its content header payload)."""
        properties = decode_properties(header)
        properties.headers = self.headers(
            dict(properties.headers or {}), exchange, routing_key, redelivered
        )
        if not self.trust_user_id:
            # The upstream validated the user-id against its own users, which mean nothing
            # here: RabbitMQ clears it unless the upstream is trusted.
            properties.user_id = None
        header = encode_header_payload(_BASIC_CLASS, len(body), properties.encode())
        return Message(exchange, routing_key, header, body, properties)

    def headers(
        self, headers: dict[str, Any], exchange: str, routing_key: str, redelivered: bool
    ) -> dict[str, Any]:
        """RabbitMQ's headers of a federated hop: where the message was first published, and
        this hop first in x-received-from (a hop already there moves up, counted again)."""
        headers.setdefault("x-original-exchange", exchange)
        headers.setdefault("x-original-routing-key", routing_key)
        earlier = headers.get("x-received-from")
        hops = (
            [hop for hop in earlier if isinstance(hop, dict)] if isinstance(earlier, list) else []
        )
        visits = 1
        for hop in hops:
            if hop.get("uri") == self.uri and hop.get("queue") == self.queue:
                visits += int(hop.get("visit-count", 1))
                hops.remove(hop)
                break
        hop = {
            "uri": self.uri,
            "queue": self.queue,
            "redelivered": redelivered,
            "visit-count": visits,
        }
        headers["x-received-from"] = [hop, *hops]
        return headers
