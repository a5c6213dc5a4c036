"""The generator's producer and consumer roles: what one connection does during a timed run."""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field

from bench import wire
from bench.client import CHANNEL, Connection
from bench.latency import LatencyRecorder

_NS = 1_000_000_000
_MAX_WRITE_BYTES = 1 << 20  # large messages are written a few at a time, not a batch at once
# uvloop's timers count whole milliseconds: an asyncio.sleep shorter than one returns on the next
# turn, so a rate-limited producer waiting for its next message would spin a core (and take it
# from the brokers it measures). Shorter waits block in the kernel instead.
_TIMER_RESOLUTION_NS = 1_000_000


@dataclass(frozen=True)
class RoleSettings:
    """Everything a role needs, picklable so it crosses into worker processes."""

    uri: str
    queues: tuple[str, ...]  # consumer i consumes from queues[i % len(queues)]
    exchange: str
    routing_key: str
    size: int
    persistent: bool
    mandatory: bool
    confirm_window: int  # 0: no publisher confirms
    rate: float  # per producer, msg/s; 0: as fast as possible
    prefetch: int  # 0: no basic.qos
    auto_ack: bool
    multi_ack_every: int  # 0: one basic.ack per message
    batch: int  # most publishes per socket write
    seconds: int  # warm-up plus measured seconds; counters keep one bucket per second
    random_priority: int | None = None  # each message gets a priority drawn from 0..this
    max_messages: int = 0  # per producer; 0: publish until the time is up
    # Producers and consumers may use other nodes of a cluster than the one `uri` names.
    producer_uri: str = ""
    consumer_uri: str = ""


@dataclass
class RoleReport:
    """Counts per second of the run (index 0 is the first second), and latency samples."""

    role: str
    seconds: int
    published: list[int] = field(default_factory=list)
    confirmed: list[int] = field(default_factory=list)
    nacked: list[int] = field(default_factory=list)
    consumed: list[int] = field(default_factory=list)
    returned: int = 0
    latencies: bytes = b""
    latency_stride: int = 1
    error: str | None = None
    ended_ns: int = 0  # when the role stopped working (its message count reached, or time up)

    def __post_init__(self) -> None:
        for counts in (self.published, self.confirmed, self.nacked, self.consumed):
            if not counts:
                counts.extend([0] * self.seconds)


class _ConfirmTracker:
    """Settles publish sequence numbers from basic.ack / basic.nack, single or multiple."""

    def __init__(self, report: RoleReport, start_ns: int) -> None:
        self._report = report
        self._start_ns = start_ns
        self._settled_up_to = 0  # every sequence number at or below is settled
        self._settled_above: set[int] = set()  # settled out of order, above the watermark
        self.settled = 0
        self.room = asyncio.Event()

    def on_confirm(self, tag: int, multiple: bool, nack: bool) -> None:
        newly = 0
        if multiple:
            if tag > self._settled_up_to:
                above = {seq for seq in self._settled_above if seq <= tag}
                newly = tag - self._settled_up_to - len(above)
                self._settled_above -= above
                self._settled_up_to = tag
        elif tag > self._settled_up_to and tag not in self._settled_above:
            newly = 1
            self._settled_above.add(tag)
            while self._settled_up_to + 1 in self._settled_above:
                self._settled_up_to += 1
                self._settled_above.discard(self._settled_up_to)
        if newly:
            self.settled += newly
            second = (time.monotonic_ns() - self._start_ns) // _NS
            if 0 <= second < self._report.seconds:
                (self._report.nacked if nack else self._report.confirmed)[second] += newly
            self.room.set()


def _body_bytes(settings: RoleSettings, stamp_ns: int, sizes: list[int], padding: bytes) -> bytes:
    body = (wire.UINT64.pack(stamp_ns) + padding) if settings.size >= 8 else padding
    return wire.body_frames(CHANNEL, body, sizes)


def _publish_heads(settings: RoleSettings, frame_max: int) -> tuple[list[bytes], list[int]]:
    """Method and header frames, one per priority a message may get, and the body frame sizes."""
    priorities: list[int | None] = (
        [None] if settings.random_priority is None else list(range(settings.random_priority + 1))
    )
    heads = []
    sizes: list[int] = []
    for priority in priorities:
        head, sizes = wire.publish_template(
            CHANNEL,
            settings.exchange,
            settings.routing_key,
            settings.size,
            persistent=settings.persistent,
            mandatory=settings.mandatory,
            frame_max=frame_max,
            priority=priority,
        )
        heads.append(head)
    return heads, sizes


async def _sleep_ns(wait_ns: int) -> None:
    if wait_ns >= _TIMER_RESOLUTION_NS:
        await asyncio.sleep(wait_ns / _NS)
    elif wait_ns > 0:
        time.sleep(wait_ns / _NS)


class Producer:
    """Publishes batches until the run ends, within the confirm window and the rate limit."""

    def __init__(self, settings: RoleSettings, name: str) -> None:
        self._settings = settings
        self._name = name
        self._connection: Connection | None = None
        self._tracker: _ConfirmTracker | None = None
        self.report = RoleReport("producer", settings.seconds)

    async def prepare(self) -> Connection:
        uri = self._settings.producer_uri or self._settings.uri
        self._connection = await Connection.open(uri, self._name)
        return self._connection

    async def run(self, start_ns: int) -> RoleReport:
        settings, connection = self._settings, self._connection
        assert connection is not None
        end_ns = start_ns + settings.seconds * _NS
        window = settings.confirm_window
        tracker = _ConfirmTracker(self.report, start_ns)
        if window:
            await connection.confirm_select(tracker.on_confirm)
        heads, sizes = _publish_heads(settings, connection.frame_max)
        padding = bytes(max(settings.size - 8, 0)) if settings.size >= 8 else bytes(settings.size)
        chooser = random.Random()
        published = self.report.published
        limit = settings.max_messages
        sent = 0
        now = await _wait_until(start_ns)
        while now < end_ns and connection.error is None:
            if limit and sent >= limit:
                if not window or tracker.settled >= sent:
                    break
                tracker.room.clear()  # every message is out: wait for the last confirms
                await _wait_event(tracker.room, end_ns)
                now = time.monotonic_ns()
                continue
            count = settings.batch if not limit else min(settings.batch, limit - sent)
            if window:
                room = window - (sent - tracker.settled)
                if room <= 0:
                    tracker.room.clear()
                    await _wait_event(tracker.room, end_ns)
                    now = time.monotonic_ns()
                    continue
                count = min(count, room)
            if settings.rate > 0:
                due = int((now - start_ns) * settings.rate / _NS) + 1 - sent
                if due <= 0:
                    next_at = start_ns + int(sent * _NS / settings.rate)
                    await _sleep_ns(next_at - now)
                    now = time.monotonic_ns()
                    continue
                count = min(count, due)
            # One stamp for the whole batch: its messages leave in the same write.
            body = _body_bytes(settings, now, sizes, padding)
            messages = [head + body for head in heads]
            count = min(count, max(1, _MAX_WRITE_BYTES // len(messages[0])))
            if len(messages) == 1:
                connection.write(messages[0] * count)
            else:
                connection.write(b"".join(chooser.choices(messages, k=count)))
            sent += count
            published[(now - start_ns) // _NS] += count
            await connection.wait_writable()
            await asyncio.sleep(0)  # let confirms and flow-control callbacks run
            now = time.monotonic_ns()
        self.report.ended_ns = time.monotonic_ns()
        connection.stop_handlers()
        self.report.returned = connection.returned
        if connection.error is not None:
            self.report.error = str(connection.error)
        await connection.close()
        return self.report


class Consumer:
    """Consumes until the run ends, acknowledging as configured and recording latencies."""

    def __init__(
        self,
        settings: RoleSettings,
        name: str,
        measure_from_second: int,
        index: int = 0,
    ) -> None:
        self._settings = settings
        self._name = name
        self._queue = settings.queues[index % len(settings.queues)]
        self._measure_from_second = measure_from_second
        self._connection: Connection | None = None
        self._latencies = LatencyRecorder()
        self.report = RoleReport("consumer", settings.seconds)

    async def prepare(self) -> Connection:
        uri = self._settings.consumer_uri or self._settings.uri
        self._connection = await Connection.open(uri, self._name)
        if self._settings.prefetch > 0:
            await self._connection.basic_qos(self._settings.prefetch)
        return self._connection

    async def run(self, start_ns: int) -> RoleReport:
        settings, connection = self._settings, self._connection
        assert connection is not None
        end_ns = start_ns + settings.seconds * _NS
        measure_from_ns = start_ns + self._measure_from_second * _NS
        consumed = self.report.consumed
        record = self._latencies.record
        write = connection.write
        ack = wire.BASIC_ACK_FRAME.pack
        every = settings.multi_ack_every
        if every and settings.prefetch:
            # Acking less often than the prefetch allows would stall the consumer forever.
            every = min(every, settings.prefetch)
        unacked = 0

        def on_deliveries(received_ns: int, tags: list[int], stamps: list[int]) -> None:
            nonlocal unacked
            if received_ns < start_ns or received_ns >= end_ns:
                return
            consumed[(received_ns - start_ns) // _NS] += len(tags)
            if received_ns >= measure_from_ns:
                record(received_ns, stamps)
            if settings.auto_ack:
                return
            if every:
                unacked += len(tags)
                if unacked >= every:
                    write(ack(1, CHANNEL, 13, 60, 80, tags[-1], 1, 0xCE))
                    unacked = 0
            else:
                write(b"".join([ack(1, CHANNEL, 13, 60, 80, tag, 0, 0xCE) for tag in tags]))

        await _wait_until(start_ns)
        await connection.basic_consume(
            self._queue, self._name, no_ack=settings.auto_ack, on_deliveries=on_deliveries
        )
        await _wait_event(connection.closed_event, end_ns)
        self.report.ended_ns = time.monotonic_ns()
        connection.stop_handlers()
        if connection.error is not None:
            self.report.error = str(connection.error)
        elif connection.consumer_cancelled:
            self.report.error = "the broker cancelled the consumer"
        self.report.latencies = self._latencies.to_bytes()
        self.report.latency_stride = self._latencies.stride
        await connection.close()
        return self.report


async def _wait_until(deadline_ns: int) -> int:
    now = time.monotonic_ns()
    # The loop may wake a timer up to its clock resolution early: a publish counted before the
    # start would land in the last second's bucket (index -1).
    while now < deadline_ns:
        await asyncio.sleep((deadline_ns - now) / _NS)
        now = time.monotonic_ns()
    return now


async def _wait_event(event: asyncio.Event, deadline_ns: int) -> None:
    remaining = (deadline_ns - time.monotonic_ns()) / _NS
    if remaining <= 0:
        return
    try:
        # asyncio.timeout, unlike wait_for, does not wrap the wait in a new task.
        async with asyncio.timeout(remaining):
            await event.wait()
    except TimeoutError:
        pass
