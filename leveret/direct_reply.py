"""Direct reply-to (amq.rabbitmq.reply-to): RPC replies straight to the requester's channel.

A reply address names the requester's node as well as its channel, as RabbitMQ's name the
channel's process: a server on any node of the cluster replies to a requester on any other,
the reply going over the link to the requester's node (see queues.proto, DirectReply).
"""

from __future__ import annotations

import base64
import binascii
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
    """The node's channels that consume from the pseudo-queue, by the address their replies
    carry: this node's name (base64url) and a random part."""

    def __init__(self, node: str) -> None:
        self.node = node
        self._node_part = base64.urlsafe_b64encode(node.encode("utf-8")).decode().rstrip("=")
        self._channels: dict[str, Requester] = {}

    def register(self, channel: Requester) -> str:
        address = f"{self._node_part}.{secrets.token_urlsafe(18)}"
        self._channels[address] = channel
        return address

    def unregister(self, address: str) -> None:
        self._channels.pop(address, None)

    def requester(self, address: str) -> Requester | None:
        """The open channel of this node that `address` names, if any."""
        channel = self._channels.get(address)
        return None if channel is None or channel.closed else channel


def reply_address(routing_key: str) -> str:
    """The address a routing key of the form amq.rabbitmq.reply-to.<address> names."""
    return routing_key[len(REPLY_PREFIX) :]


def node_of(address: str) -> str | None:
    """The node whose channel `address` names (None: no address this cluster made)."""
    node_part, dot, _ = address.partition(".")
    if not dot:
        return None
    try:
        padded = node_part + "=" * (-len(node_part) % 4)
        return base64.urlsafe_b64decode(padded.encode("ascii")).decode("utf-8")
    except (ValueError, binascii.Error, UnicodeError):
        return None


def with_reply_address(message: Message, address: str | None, method: tuple[int, int]) -> Message:
    """A request whose reply_to names the pseudo-queue gets the requester's own reply address."""
    if address is None:
        raise precondition_failed("fast reply consumer does not exist", method)
    properties = message.properties
    properties.reply_to = REPLY_PREFIX + address
    header = encode_header_payload(60, len(message.body), properties.encode())
    return Message(message.exchange, message.routing_key, header, message.body)
