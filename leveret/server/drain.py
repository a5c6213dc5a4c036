"""Draining a node before it stops (a rolling restart's preStop): clients move elsewhere first."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ..broker import Broker
from ..session import open_sessions

log = logging.getLogger(__name__)

# RabbitMQ's words to clients when a node enters maintenance mode.
DRAIN_REASON = "Node was put into maintenance mode"
_POLL_SECONDS = 0.05


@dataclass(frozen=True, slots=True)
class DrainReport:
    """What a drain did: connections closed, and those that still waited for confirms."""

    closed_connections: int
    unconfirmed_connections: int


async def drain(
    broker: Broker,
    stop_listening: Callable[[], None],
    hand_over_leadership: Callable[[], Awaitable[None]],
    timeout: float,
) -> DrainReport:
    """Stop taking clients, let the cluster lead elsewhere, give publishers their confirms
    (waiting at most `timeout` seconds), then close every client connection with 320.

    Publishers are blocked first, as by a resource alarm, so that the confirms they wait for
    are a finite set: what the node has read is confirmed, what it has not is theirs to resend
    through another node."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    broker.start_draining()
    stop_listening()
    await hand_over_leadership()
    while loop.time() < deadline and any(s.awaiting_confirms() for s in open_sessions(broker)):
        await asyncio.sleep(_POLL_SECONDS)
    sessions = [session for session in open_sessions(broker) if not session.closed]
    unconfirmed = sum(1 for session in sessions if session.awaiting_confirms())
    for session in sessions:
        session.close_forced(DRAIN_REASON)
    log.info(
        "drained: closed %d client connections (%d still waited for confirms)",
        len(sessions),
        unconfirmed,
    )
    return DrainReport(len(sessions), unconfirmed)
