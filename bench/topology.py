"""Where a perftest run's messages go: its queues and exchange, declared before it, deleted
after."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bench.client import Connection


@dataclass(frozen=True)
class Topology:
    queues: tuple[str, ...]
    exchange: str = ""  # "": the default exchange
    exchange_type: str = ""  # "": the exchange is not ours to declare (the default, or existing)
    routing_key: str = ""  # producers' routing key, and every queue's binding key
    durable: bool = False  # queues, and the exchange when we declare it
    queue_arguments: Mapping[str, int | str] = field(default_factory=dict)


def queue_names(queue: str, pattern: str, first: int, last: int) -> tuple[str, ...]:
    """The queue, or with a pattern such as `q-%d` one queue per number from `first` to `last`."""
    if not pattern:
        return (queue,)
    if last < first:
        raise ValueError(f"empty queue pattern range {first}..{last}")
    return tuple(pattern % number for number in range(first, last + 1))


def parse_queue_arguments(text: str) -> dict[str, int | str]:
    """`x-max-length=1000,x-overflow=drop-head` as a table; whole numbers become integers."""
    arguments: dict[str, int | str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, separator, value = item.partition("=")
        if not separator or not key:
            raise ValueError(f"queue argument {item!r} is not KEY=VALUE")
        arguments[key] = int(value) if value.lstrip("-").isdigit() else value
    return arguments


async def declare(uri: str, topology: Topology) -> dict[str, Any]:
    """Declare the exchange and queues, empty the queues, bind them; the broker's properties."""
    connection = await Connection.open(uri, "leveret-bench-setup")
    try:
        if topology.exchange_type:
            await connection.exchange_declare(
                topology.exchange, topology.exchange_type, durable=topology.durable
            )
        for queue in topology.queues:
            await connection.queue_declare(
                queue, durable=topology.durable, arguments=topology.queue_arguments
            )
            await connection.queue_purge(queue)
            if topology.exchange:
                await connection.queue_bind(queue, topology.exchange, topology.routing_key)
        return connection.server_properties
    finally:
        await connection.close()


async def delete(uri: str, topology: Topology) -> None:
    """Delete the queues, and the exchange when it was declared for the run."""
    connection = await Connection.open(uri, "leveret-bench-teardown")
    try:
        for queue in topology.queues:
            await connection.queue_delete(queue)
        if topology.exchange_type:
            await connection.exchange_delete(topology.exchange)
    finally:
        await connection.close()
