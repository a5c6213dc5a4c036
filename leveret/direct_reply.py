"""Direct reply-to (amq.rabbitmq.reply-to): RPC replies straight to the requester's channel."""

from __future__ import annotations

import secrets
from typing import Protocol

from .amqp.errors import precondition_failed
from .amqp.properties import encode_header_payload
from .message import Message

REPLY_QUEUE = "amq.rabbitmq.reply-to"
REPLY_PREFIX = REPLY_QUEUE + "."


class Requester(Protocol):
    """A channel consuming from the pseudo-queue: replies go straight to it."""

    closed: bool

    def deliver_reply(self, message: Message) -> None: ...


class DirectReplyRegistry:
    """The node's channels that consume from the pseudo-queue, by the suffix their replies carry."""

    def __init__(self) -> None:
        self._channels: dict[str, Requester] = {}

    def register(self, channel: Requester) -> str:
        suffix = secrets.token_urlsafe(18)
        self._channels[suffix] = channel
        return suffix

    def unregister(self, suffix: str) -> None:
        self._channels.pop(suffix, None)

    def channel_for(self, routing_key: str) -> Requester | None:
        return self._channels.get(routing_key[len(REPLY_PREFIX) :])


def with_reply_address(message: Message, suffix: str | None, method: tuple[int, int]) -> Message:
    """A request whose reply_to names the pseudo-queue gets the requester's own reply address."""
    if suffix is None:
        raise precondition_failed("fast reply consumer does not exist", method)
    properties = message.properties
    properties.reply_to = REPLY_PREFIX + suffix
    header = encode_header_payload(60, len(message.body), properties.encode())
    return Message(message.exchange, message.routing_key, header, message.body)
