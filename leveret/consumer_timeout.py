"""RabbitMQ's consumer_timeout: a channel whose oldest unacknowledged delivery is older than the
timeout is closed with 406, and what it held goes back to its queues, marked redelivered.

Deliveries carry no timestamp. Instead, one sweep over every channel per interval leaves a mark
on each: (the channel's next delivery tag, the time). A delivery whose tag is below a mark's was
made before that mark's time, so the first mark above the oldest unacknowledged tag bounds that
delivery's age from below: a channel is closed only once the timeout has surely passed, and at
most about two intervals late. The sweep costs one look per channel, nothing per message.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import Protocol

from .amqp.errors import AMQPError, ReplyCode

log = logging.getLogger(__name__)

# RabbitMQ 3.10's default: 30 minutes.
DEFAULT_CONSUMER_TIMEOUT_MS = 1_800_000
# Sweeps run four times per timeout, within these bounds (seconds).
_MIN_INTERVAL = 0.05
_MAX_INTERVAL = 15.0


def timed_out(channel: int, timeout_ms: int) -> AMQPError:
    return AMQPError(
        ReplyCode.PRECONDITION_FAILED,
        f"delivery acknowledgement on channel {channel} timed out. Timeout value used: "
        f"{timeout_ms} ms. This timeout value can be configured, see consumers doc guide to "
        "learn more",
    )


class DeliveryMarks:
    """One channel's marks: (next delivery tag, time), oldest first."""

    __slots__ = ("_marks",)

    def __init__(self) -> None:
        self._marks: deque[tuple[int, float]] = deque()

    def oldest_age(self, next_tag: int, oldest_unacked: int | None, now: float) -> float:
        """Leave this sweep's mark; return how long the delivery `oldest_unacked` has surely
        been unacknowledged (0 when there is none or it is newer than every earlier mark)."""
        marks = self._marks
        if not marks or marks[-1][0] != next_tag:
            # With no delivery since the last mark, that earlier mark says more.
            marks.append((next_tag, now))
        if oldest_unacked is None:
            while len(marks) > 1:
                marks.popleft()
            return 0.0
        while len(marks) > 1 and marks[0][0] <= oldest_unacked:
            marks.popleft()  # it bounds only deliveries already settled
        first_tag, first_time = marks[0]
        return now - first_time if first_tag > oldest_unacked else 0.0


class TimedChannel(Protocol):
    """What the sweep needs of a channel."""

    number: int

    def oldest_unacked_age(self, now: float) -> float: ...

    def fail(self, error: AMQPError) -> None: ...


class ConsumerTimeoutSweep:
    """Closes the channels, among those `channels()` yields, that hold a delivery too long
    (none when the timeout is 0)."""

    def __init__(self, timeout_ms: int, channels: Callable[[], Iterable[TimedChannel]]) -> None:
        self.timeout_ms = timeout_ms
        self._channels = channels
        self.interval = min(max(timeout_ms / 4000, _MIN_INTERVAL), _MAX_INTERVAL)
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self.timeout_ms > 0:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="ack-timeout")

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()

    def sweep(self, now: float) -> int:
        """Close the channels whose oldest delivery is over the timeout; how many were."""
        limit = self.timeout_ms / 1000
        late = [ch for ch in list(self._channels()) if ch.oldest_unacked_age(now) > limit]
        for channel in late:
            log.warning("consumer timeout on channel %d (%d ms)", channel.number, self.timeout_ms)
            channel.fail(timed_out(channel.number, self.timeout_ms))
        return len(late)

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            try:
                self.sweep(time.monotonic())
            except Exception:
                log.exception("the consumer timeout sweep failed")
