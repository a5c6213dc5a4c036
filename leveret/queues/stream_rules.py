"""What a channel refuses of a stream, checked on the client's node (where RabbitMQ's channel
checks it), with RabbitMQ 3.10's codes and texts."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from ..amqp.errors import AMQPError, ReplyCode
from .stream_offsets import parse_offset

# Consumer arguments of the other queue types.
_REFUSED_CONSUMER_ARGUMENTS = ("x-priority", "x-cancel-on-ha-failover")


def _resource(name: str, vhost: str) -> str:
    return f"queue '{name}' in vhost '{vhost}'"


def check_consume(
    name: str,
    vhost: str,
    arguments: Mapping[str, Any],
    *,
    no_ack: bool,
    prefetch: int,
    global_prefetch: int,
    method: tuple[int, int],
) -> None:
    """basic.consume of a stream: its arguments, then a prefetch, manual acks, no global qos."""
    resource = _resource(name, vhost)
    parse_offset(arguments, int(time.time() * 1000), resource, method)
    for key in arguments:
        if key in _REFUSED_CONSUMER_ARGUMENTS:
            raise AMQPError(
                ReplyCode.PRECONDITION_FAILED,
                f"invalid arg '{key}' for {resource} of queue type rabbit_stream_queue",
                method,
            )
    if not prefetch:
        raise AMQPError(
            ReplyCode.PRECONDITION_FAILED,
            f"consumer prefetch count is not set for '{resource}'",
            method,
        )
    if no_ack:
        raise AMQPError(
            ReplyCode.NOT_IMPLEMENTED,
            f"automatic acknowledgement not supported by stream queues {resource}",
            method,
        )
    if global_prefetch:
        raise AMQPError(
            ReplyCode.NOT_IMPLEMENTED, f"{resource} does not support global qos", method
        )


def check_classic_consume(
    name: str, vhost: str, arguments: Mapping[str, Any], method: tuple[int, int]
) -> None:
    """x-stream-offset is a stream's consumer argument: refused on a classic queue."""
    if "x-stream-offset" in arguments:
        raise AMQPError(
            ReplyCode.PRECONDITION_FAILED,
            f"invalid arg 'x-stream-offset' for {_resource(name, vhost)} "
            "of queue type rabbit_classic_queue",
            method,
        )


def not_supported(what: str, name: str, vhost: str, method: tuple[int, int]) -> AMQPError:
    """basic.get, queue.purge, basic.nack and basic.reject: 540, closing the connection."""
    return AMQPError(
        ReplyCode.NOT_IMPLEMENTED,
        f"{what} not supported by stream queues {_resource(name, vhost)}",
        method,
    )


def recover_failed(method: tuple[int, int]) -> AMQPError:
    """basic.recover with stream deliveries outstanding: RabbitMQ's channel fails (541)."""
    return AMQPError(ReplyCode.INTERNAL_ERROR, "", method)
