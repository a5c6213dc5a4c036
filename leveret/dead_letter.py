"""Dead-lettering as RabbitMQ does it: the x-death history, first-death headers, cycle detection."""

from __future__ import annotations

import datetime
from typing import Any

from .amqp.fields import Long
from .amqp.properties import encode_header_payload
from .message import Message


def dead_lettered(
    message: Message, queue: str, reason: str, exchange: str, routing_key: str
) -> Message:
    """A copy of `message` for `exchange`, its headers carrying this death."""
    properties = message.properties
    headers: dict[str, Any] = dict(properties.headers or {})
    deaths: list[Any] = [d for d in headers.get("x-death") or [] if isinstance(d, dict)]
    routing_keys = [message.routing_key, *_cc(headers)]
    for index, death in enumerate(deaths):
        if death.get("queue") == queue and death.get("reason") == reason:
            del deaths[index]
            death = dict(death)
            death["count"] = Long(int(death.get("count", 0)) + 1)
            death["time"] = _now()
            deaths.insert(0, death)
            break
    else:
        death = {
            "count": Long(1),  # a long, as RabbitMQ sends it (Java clients read a Long)
            "reason": reason,
            "queue": queue,
            "time": _now(),
            "exchange": message.exchange,
            "routing-keys": routing_keys,
        }
        if properties.expiration is not None:
            death["original-expiration"] = properties.expiration
        deaths.insert(0, death)
    headers["x-death"] = deaths
    if "x-first-death-reason" not in headers:
        headers["x-first-death-reason"] = reason
        headers["x-first-death-queue"] = queue
        headers["x-first-death-exchange"] = message.exchange
    properties.headers = headers
    # A per-message TTL does not follow the message: it would expire again at once.
    properties.expiration = None
    header = encode_header_payload(60, len(message.body), properties.encode())
    return Message(exchange, routing_key, header, message.body)


def is_cycle(message: Message, target_queue: str) -> bool:
    """RabbitMQ drops a dead-lettered message that would come back to a queue it already died in,
    unless a client rejected it somewhere on the way (then the loop is the client's choice)."""
    deaths = (message.properties.headers or {}).get("x-death") or []
    seen_target = False
    for death in deaths:
        if not isinstance(death, dict):
            continue
        if death.get("reason") == "rejected":
            return False
        if death.get("queue") == target_queue:
            seen_target = True
    return seen_target


def _cc(headers: dict[str, Any]) -> list[str]:
    cc = headers.get("CC")
    if isinstance(cc, list):
        return [c.decode() if isinstance(c, bytes) else str(c) for c in cc]
    return []


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC).replace(microsecond=0)
