"""What the management layer keeps per broker: definitions it stores, samples, churn, auth
counts."""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import Hashable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..session import open_sessions
from .figures import QueueFigures, QueueReader, total
from .history import History
from .rates import SAMPLE_INTERVAL_SECONDS, RateTable
from .system import system_figures

if TYPE_CHECKING:
    from ..broker import Broker
    from ..queues.classic import ClassicQueue
    from .node_control import NodeControl

log = logging.getLogger(__name__)

# Reading every queue's figures costs about 10 us a queue. With many queues, the requests that
# read them all (the overview and queue listings that the web UI's tabs poll) share one reading
# for a second, as RabbitMQ's API answers from statistics it collects every 5 s; with fewer, each
# request reads afresh, so that a script sees its own change at once.
SHARED_READING_FROM_QUEUES = 1000
SHARED_READING_SECONDS = 1.0

NODE_KEY = ("node",)
CHURN_KEY = ("churn",)
SYSTEM_KEY = ("system",)


def queue_key(queue: ClassicQueue) -> Hashable:
    # The identity is part of the key so that a queue re-created under the same name starts afresh.
    return ("queue", queue.vhost, queue.name, id(queue))


def vhost_key(name: str) -> Hashable:
    return ("vhost", name)


@dataclass(slots=True)
class Churn:
    """Objects opened and closed since the node started, observed by sampling.

    Sampling misses objects that come and go between two looks; the totals are exact once the
    core counts them itself (see the lead's notes).
    """

    connections_opened: int = 0
    connections_closed: int = 0
    channels_opened: int = 0
    channels_closed: int = 0
    queues_created: int = 0
    queues_deleted: int = 0
    # When each live connection and channel was first seen (wall clock), by id.
    first_seen: dict[int, float] = field(default_factory=dict)
    _sessions: set[int] = field(default_factory=set)
    _channels: set[int] = field(default_factory=set)
    _queues: set[int] = field(default_factory=set)

    def observe(self, broker: Broker) -> None:
        sessions = {id(s) for s in open_sessions(broker)}
        channels = {id(c) for s in open_sessions(broker) for c in s.channels.values()}
        queues = {id(q) for v in broker.vhosts.values() for q in v.queues.values()}
        self.connections_opened += len(sessions - self._sessions)
        self.connections_closed += len(self._sessions - sessions)
        self.channels_opened += len(channels - self._channels)
        self.channels_closed += len(self._channels - channels)
        self.queues_created += len(queues - self._queues)
        self.queues_deleted += len(self._queues - queues)
        now = time.time()
        for key in (sessions - self._sessions) | (channels - self._channels):
            self.first_seen[key] = now
        for key in (self._sessions - sessions) | (self._channels - channels):
            self.first_seen.pop(key, None)
        self._sessions, self._channels, self._queues = sessions, channels, queues


@dataclass(slots=True)
class AuthCounts:
    attempts: int = 0
    succeeded: int = 0
    failed: int = 0


class ManagementState:
    """Per-broker management state; `sample()` runs every few seconds on the node's loop."""

    def __init__(self, broker: Broker) -> None:
        self._broker = weakref.ref(broker)
        self.registry = broker.registry  # policies and parameters live in the core
        self.reader = QueueReader()
        self.rates = RateTable()
        self.history = History(always=[NODE_KEY])  # the figures behind the UI's charts
        self.churn = Churn()
        self.http_auth = AuthCounts()
        # Who declared an exchange or queue through the API: (kind, vhost, name) -> user.
        self.actors: dict[tuple[str, str, str], str] = {}
        # Wall-clock time each queue's figures last changed (RabbitMQ's idle_since).
        self.last_active: dict[Hashable, float] = {}
        self.started_monotonic = time.monotonic()
        self.started_wall = time.time()
        # Bound ports by protocol name ("amqp", "mgmt", "cluster"); the node shares its dict.
        self.listeners: Mapping[str, int] = {}
        self.listen_host = "0.0.0.0"
        # The running node, for probes and the drain (None when the API is served alone).
        self.node: NodeControl | None = None
        self._collector: asyncio.Task[None] | None = None
        self._servers = 0
        self._shared: tuple[float, dict[ClassicQueue, QueueFigures]] | None = None
        # Within `one_reading()`, the reading every request shares (None until the first).
        self._pinned: dict[ClassicQueue, QueueFigures] | None = None
        self._pinning = False
        # Readings of every queue's figures since the node started (the costly part of a
        # request), counted so that the sharing can be checked (/api/live/stats).
        self.readings = 0

    def figures(self) -> dict[ClassicQueue, QueueFigures]:
        broker = self._broker()
        if broker is None:
            return {}
        self.churn.observe(broker)
        now = time.monotonic()
        if self._pinned is not None:
            return self._pinned
        shared = self._shared
        if shared is not None and now - shared[0] < SHARED_READING_SECONDS:
            return shared[1]
        figures = self.reader.read(broker)
        self.readings += 1
        self._shared = (now, figures) if len(figures) >= SHARED_READING_FROM_QUEUES else None
        if self._pinning:
            self._pinned = figures
        return figures

    def figures_of(self, queues: list[ClassicQueue]) -> dict[ClassicQueue, QueueFigures]:
        """The figures of `queues` (a page of a listing): from the reading requests share when
        there is a recent one, else read for these queues alone."""
        broker = self._broker()
        if broker is None:
            return {}
        shared = self._pinned
        recent = self._shared
        if shared is None and recent and time.monotonic() - recent[0] < SHARED_READING_SECONDS:
            shared = recent[1]
        if shared is not None and all(queue in shared for queue in queues):
            return {queue: shared[queue] for queue in queues}
        return self.reader.read_some(queues)

    @contextmanager
    def one_reading(self) -> Iterator[None]:
        """Every request answered inside shares one reading of the queues' figures (the live
        streams' tick renders many answers from the same second)."""
        self._pinning = True
        try:
            yield
        finally:
            self._pinning = False
            self._pinned = None

    def figure(self, queue: ClassicQueue) -> QueueFigures:
        broker = self._broker()
        if broker is None:
            return QueueFigures()
        self.churn.observe(broker)
        return self.reader.read_one(queue)

    def observe(self) -> None:
        """Note connections, channels and queues that came or went since the last look."""
        broker = self._broker()
        if broker is not None:
            self.churn.observe(broker)

    def sample(self) -> None:
        """Record every object's figures for rates."""
        broker = self._broker()
        if broker is None:
            return
        now = time.monotonic()
        figures = self.figures()
        keys: set[Hashable] = {NODE_KEY}
        by_vhost: dict[str, list[QueueFigures]] = {name: [] for name in broker.vhosts}
        wall = time.time()
        for queue, figure in figures.items():
            key = queue_key(queue)
            keys.add(key)
            sampled = _sampled(figure)
            if self.rates.changed(key, sampled) or key not in self.last_active:
                self.last_active[key] = wall
            self.rates.observe(key, now, sampled)
            self.history.record(key, wall, sampled)
            by_vhost.setdefault(queue.vhost, []).append(figure)
        for name, items in by_vhost.items():
            keys.add(vhost_key(name))
            self.rates.observe(vhost_key(name), now, _sampled(total(items)))
        node_sampled = _sampled(total(figures.values()))
        self.rates.observe(NODE_KEY, now, node_sampled)
        self.history.record(NODE_KEY, wall, node_sampled)
        churn = self.churn
        self.rates.observe(
            CHURN_KEY,
            now,
            {
                "channel_closed": churn.channels_closed,
                "channel_created": churn.channels_opened,
                "connection_closed": churn.connections_closed,
                "connection_created": churn.connections_opened,
                "queue_created": churn.queues_created,
                "queue_declared": churn.queues_created,
                "queue_deleted": churn.queues_deleted,
            },
        )
        system = system_figures(broker.config)
        self.rates.observe(
            SYSTEM_KEY,
            now,
            {
                "mem_used": system.mem_used,
                "fd_used": system.fd_used,
                "sockets_used": len(open_sessions(broker)),
                "disk_free": system.disk_free,
            },
        )
        keys.update((CHURN_KEY, SYSTEM_KEY))
        self.rates.retain(keys)
        self.history.retain(now, keys)
        for key in [key for key in self.last_active if key not in keys]:
            del self.last_active[key]

    def server_started(self) -> None:
        self._servers += 1
        if self._collector is None:
            self.sample()
            self._collector = asyncio.get_running_loop().create_task(self._collect())

    def server_stopped(self) -> None:
        self._servers -= 1
        if self._servers <= 0 and self._collector is not None:
            self._collector.cancel()
            self._collector = None

    async def _collect(self) -> None:
        while True:
            await asyncio.sleep(SAMPLE_INTERVAL_SECONDS)
            try:
                self.sample()
            except Exception:  # a sampling bug must not stop the statistics for good
                log.exception("management statistics sampling failed")


def _sampled(figure: QueueFigures) -> dict[str, float]:
    values: dict[str, float] = dict(figure.totals())
    values["messages"] = figure.messages
    values["messages_ready"] = figure.ready
    values["messages_unacknowledged"] = figure.unacked
    return values


_STATES: weakref.WeakKeyDictionary[Broker, ManagementState] = weakref.WeakKeyDictionary()


def management_state(broker: Broker) -> ManagementState:
    """The broker's management state, created on first use."""
    state = _STATES.get(broker)
    if state is None:
        state = _STATES[broker] = ManagementState(broker)
    return state
