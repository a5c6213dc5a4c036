"""The connector's options, read and checked once, with errors that name the option."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

# basic.qos prefetch_count is a short on the wire.
MAX_PREFETCH = 65535


class OptionError(ValueError):
    """An option is missing or wrong; the text names it."""


@dataclass(frozen=True, slots=True)
class SourceOptions:
    uris: tuple[str, ...]  # tried in order: the nodes of a cluster, say
    queues: tuple[str, ...]
    prefetch: int  # unacknowledged messages per queue: the batch in progress and the next
    max_messages: int  # per batch (a micro-batch, or a batch read)
    max_bytes: int  # of bodies per batch
    priority: int  # the consumer's x-priority: a pipeline may yield to other consumers
    acknowledge: bool  # a batch read: acknowledge what it read, or leave it queued (peek)
    wait_seconds: float  # how long a read waits for the first message
    stream: bool  # the queues are stream queues, read by offset (stream_source.py)
    starting_offsets: str  # a stream query's start: earliest, latest or JSON queue -> offset
    driver_host: str  # where executors fetch a micro-batch from the driver's reader


@dataclass(frozen=True, slots=True)
class SinkOptions:
    uris: tuple[str, ...]
    exchange: str  # unless a row has an exchange column
    routing_key: str  # unless a row has a routing_key column
    persistent: bool  # delivery_mode 2 unless a row says otherwise


def _number(options: Mapping[str, str], name: str, default: int, low: int = 0) -> int:
    text = options.get(name)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        raise OptionError(f"option '{name}' must be an integer, not {text!r}") from None
    if value < low:
        raise OptionError(f"option '{name}' must be at least {low}, not {value}")
    return value


def _uris(options: Mapping[str, str]) -> tuple[str, ...]:
    uris = tuple(uri.strip() for uri in (options.get("uri") or "").split(",") if uri.strip())
    if not uris:
        raise OptionError(
            "option 'uri' is required, e.g. amqp://user:password@host:5672/%2F "
            "(or several, separated by commas, tried in order)"
        )
    for uri in uris:
        if not uri.startswith(("amqp://", "amqps://")):
            shown = uri.rsplit("@", 1)[-1]
            raise OptionError(f"option 'uri' must hold amqp:// or amqps:// URIs, not {shown!r}")
    return uris


def source_options(options: Mapping[str, str]) -> SourceOptions:
    queues = tuple(q.strip() for q in (options.get("queue") or "").split(",") if q.strip())
    if not queues:
        raise OptionError("option 'queue' is required (one queue, or several separated by commas)")
    ack = (options.get("ack") or "true").lower()
    if ack not in ("true", "false"):
        raise OptionError(f"option 'ack' must be true or false, not {ack!r}")
    wait_ms = _number(options, "waitMs", 1000)
    max_messages = _number(options, "maxMessages", 10_000, 1)
    # Room for the batch in progress and the next one, which then waits when Spark asks.
    prefetch = _number(options, "prefetch", min(2 * max_messages, MAX_PREFETCH), 1)
    if prefetch > MAX_PREFETCH:
        raise OptionError(f"option 'prefetch' must be at most {MAX_PREFETCH}, not {prefetch}")
    stream = (options.get("stream") or "false").lower()
    if stream not in ("true", "false"):
        raise OptionError(f"option 'stream' must be true or false, not {stream!r}")
    starting = options.get("startingOffsets")
    if starting is not None and stream != "true":
        raise OptionError("option 'startingOffsets' needs option 'stream' true (stream queues)")
    priority_name = "x-priority" if "x-priority" in options else "priority"
    return SourceOptions(
        uris=_uris(options),
        queues=queues,
        prefetch=prefetch,
        max_messages=max_messages,
        max_bytes=_number(options, "maxBytes", 64 * 1024 * 1024, 1),
        priority=_number(options, priority_name, 0, -(2**31)),
        acknowledge=ack == "true",
        wait_seconds=wait_ms / 1000,
        stream=stream == "true",
        starting_offsets=starting if starting is not None else "latest",
        # Executors on other hosts need the driver's address (Spark's own, by default).
        driver_host=options.get("driverHost") or os.environ.get("SPARK_LOCAL_IP") or "127.0.0.1",
    )


def sink_options(options: Mapping[str, str]) -> SinkOptions:
    persistent = (options.get("persistent") or "true").lower()
    if persistent not in ("true", "false"):
        raise OptionError(f"option 'persistent' must be true or false, not {persistent!r}")
    return SinkOptions(
        uris=_uris(options),
        exchange=options.get("exchange") or "",
        routing_key=options.get("routingKey") or options.get("queue") or "",
        persistent=persistent == "true",
    )
