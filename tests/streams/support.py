"""Helpers of the stream tests: declaring a stream, publishing with confirms, reading from an
offset with a bounded wait."""

from __future__ import annotations

import time
from typing import Any

import pika
from pika.adapters.blocking_connection import BlockingChannel

STREAM = {"x-queue-type": "stream"}


def declare_stream(ch: BlockingChannel, name: str, **arguments: Any) -> int:
    """Declare stream `name` (arguments given with '_' for '-'); its declare-ok message count."""
    extra = {"x-" + key.replace("_", "-"): value for key, value in arguments.items()}
    return int(
        ch.queue_declare(name, durable=True, arguments={**STREAM, **extra}).method.message_count
    )


def publish(ch: BlockingChannel, queue: str, bodies: list[bytes], **properties: Any) -> None:
    """Publish on a channel in confirm mode (each publish waits for its confirm)."""
    for body in bodies:
        ch.basic_publish("", queue, body, pika.BasicProperties(**properties), mandatory=True)


def read(
    ch: BlockingChannel,
    queue: str,
    offset: Any = None,
    *,
    count: int,
    prefetch: int = 100,
    timeout: float = 5.0,
    ack: bool = True,
) -> list[tuple[int, bytes]]:
    """Consume until `count` messages came or `timeout` passed: (x-stream-offset, body) each,
    acknowledged as they come when `ack`. The consumer is cancelled at the end."""
    ch.basic_qos(prefetch_count=prefetch)
    got: list[tuple[int, bytes]] = []

    def on_message(channel: BlockingChannel, method: Any, properties: Any, body: bytes) -> None:
        got.append((int(properties.headers["x-stream-offset"]), body))
        if ack:
            channel.basic_ack(method.delivery_tag)

    arguments = {} if offset is None else {"x-stream-offset": offset}
    tag = ch.basic_consume(queue, on_message, arguments=arguments)
    deadline = time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        ch.connection.process_data_events(time_limit=0.05)
    ch.basic_cancel(tag)
    return got


def settle_quietly(ch: BlockingChannel, seconds: float) -> None:
    """Let `seconds` pass while the connection keeps serving (to prove nothing more arrives)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        ch.connection.process_data_events(time_limit=0.05)
