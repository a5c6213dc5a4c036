"""One federation link: pulls an upstream queue's messages into a local queue on local demand.

The link connects to its upstream (each URI in turn), checks that the upstream announces
consumer priorities, declares the upstream queue passively (with the downstream queue's
arguments only when it is missing), sets the prefetch, and consumes with `x-priority: -1`, so
that upstream consumers of normal priority are served first. Demand has hysteresis: the link
starts consuming only when the local queue has no ready message and a consumer of priority 0 or
more can take one, and cancels only when no such consumer remains, the local ready count passes
the upstream prefetch-count, or this node has a resource alarm. Starting only on an empty queue
with a willing consumer keeps messages where they are when nobody here wants them; not
cancelling as soon as a consumer is prefetch-blocked keeps a slow consumer from making the link
consume and cancel once per prefetch window (the messages it lets in are no more than a
consuming link holds unacknowledged anyway).
Acknowledgements go upstream in batches, after the local fsync in on-confirm mode, and while
consuming at least as many stay outstanding upstream as messages wait here: the upstream's
prefetch then paces the link to the local consumers, so the ready count stays under the mark
and a slow consumer does not make the link cancel at all (no-ack mode cannot be paced).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import time
import zlib
from collections import deque
from collections.abc import Callable
from enum import Enum
from typing import Any

from leveret.queues.classic import ClassicQueue

from .client import AuthenticationFailed, UpstreamClosed, UpstreamConnection
from .forward import Hop
from .upstreams import Upstream, safe_uri

log = logging.getLogger(__name__)

# How long a connection attempt to one upstream URI may take.
_CONNECT_SECONDS = 10.0
# The consumer argument by which a link recognises its own consumer on an upstream queue.
_LINK_MARK = "x-federation-link"
_NOT_FOUND = 404
# How long a stopping link waits for the disk before it acknowledges what it took.
_STOP_SETTLE_SECONDS = 2.0
# States of an upstream delivery until it is acknowledged.
_PENDING, _TAKEN, _REFUSED = 0, 1, 2


class LinkStatus(Enum):
    STARTING = "starting"
    RUNNING = "running"
    ERROR = "error"


class UpstreamRefused(Exception):
    """The upstream cannot serve a queue link (the reason is the link's error)."""


class UpstreamIsThisQueue(Exception):
    """The upstream queue is the federated queue itself, reached through this cluster (an
    upstream set such as `all` names every node of the cluster, this one too)."""


# Calls `callback(error)` once what was published so far is on disk (error: it is not).
WhenDurable = Callable[[Callable[[BaseException | None], None]], None]


class FederationLink:
    """The link from `upstream` into `queue`; start() runs it until stop()."""

    def __init__(
        self,
        queue: ClassicQueue,
        upstream: Upstream,
        policy: str,
        when_durable: WhenDurable,
        node: str,
        alarmed: Callable[[], bool],
    ) -> None:
        self.queue = queue
        self.upstream = upstream
        self.policy = policy
        self.node = node
        self.status = LinkStatus.STARTING
        self.error: str | None = None
        self.uri: str = safe_uri(upstream.uris[0])
        self._hop = Hop(self.uri, self.upstream_queue, upstream.trust_user_id)
        self.consuming = False  # pulling now, rather than waiting for local demand
        self.is_this_queue = False  # the upstream turned out to be the queue itself: idle
        self._stopping = False  # stop() was called: deliveries are no longer taken
        # Deliveries held back until the first consume shows the upstream is not this queue.
        self._on_probation: list[tuple[int, bool, str, str, bytes, bytes]] | None = None
        self.changed_at = time.time()
        self.forwarded = 0
        self._when_durable = when_durable
        # While this node has a resource alarm the link does not pull, whatever the demand:
        # the alarm blocks publishers because the node cannot take more.
        self._alarmed = alarmed
        self._task: asyncio.Task[None] | None = None
        # Set while the link wants to consume, cleared while it wants not to: the hysteresis
        # state of demand_may_have_changed.
        self._demand = asyncio.Event()
        self._no_demand = asyncio.Event()
        # Past this many ready messages here the link cancels even with consumers waiting. With
        # prefetch-count 0 (no limit upstream) there is no such bound: any ready message stops it.
        self._high_water = max(0, upstream.prefetch_count)
        self._connection: UpstreamConnection | None = None
        # The connection while the link waits for demand, and basic.consume sent meanwhile.
        self._parked: UpstreamConnection | None = None
        self._consume_ok: asyncio.Future[Any] | None = None
        self._consume_arguments: dict[str, Any] = {}
        self._no_ack = upstream.ack_mode == "no-ack"
        self._on_confirm = upstream.ack_mode == "on-confirm"
        self._outcome = _TAKEN  # how the local queue took the latest delivery (see stored)
        # Acknowledgements pace the upstream (not in no-ack mode, nor without a prefetch limit).
        self._paced = not self._no_ack and self._high_water > 0
        self._held = False  # settled deliveries wait for the local ready count to fall
        # Held acknowledgements go in runs of at least this many: one basic.ack per consumer
        # acknowledgement here would make the upstream send one message at a time.
        self._release_batch = max(1, self._high_water // 8)
        # Upstream deliveries not yet acknowledged, in delivery order: [tag, state]. They are
        # acknowledged in that order (a multiple ack covers a run of taken ones), whatever order
        # the disk confirms them in.
        self._unsettled: deque[list[int]] = deque()
        self._flush_scheduled = False
        self._to_disk: list[list[int]] = []  # taken since the last wait for the disk

    @property
    def upstream_queue(self) -> str:
        return self.upstream.queue or self.queue.name

    # --- life -----------------------------------------------------------------------------------

    def start(self) -> None:
        self.queue.decorators.append(self)
        self.demand_may_have_changed(self.queue)
        self._spawn()

    def _spawn(self) -> None:
        self._task = asyncio.get_running_loop().create_task(
            self._run(),
            name=f"federation-{self.queue.vhost}-{self.queue.name}-{self.upstream.name}",
        )

    async def stop(self) -> None:
        """Stop pulling; messages stay where they are (unacknowledged ones go back upstream)."""
        with contextlib.suppress(ValueError):
            self.queue.decorators.remove(self)
        # What was held back only to pace the link, or waits for the disk, is here already:
        # acknowledge it first, so a clean stop (a rolling restart, a removed policy) does not
        # bring it again; what the upstream sends meanwhile is not taken, and goes back to it
        # when the link closes.
        self._stopping = True
        self.consuming = False
        deadline = time.monotonic() + _STOP_SETTLE_SECONDS
        while any(state == _PENDING for _, state in self._unsettled):
            if time.monotonic() > deadline:
                break
            await asyncio.sleep(0.01)
        self._flush()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def restart(self) -> None:
        """Reconnect now (the management API's restart)."""
        if self._task is not None:
            self._task.cancel()
        self._spawn()

    def demand_may_have_changed(self, queue: ClassicQueue) -> None:
        # Called on every publish, delivery and acknowledgement of the queue: kept cheap.
        if self._held and queue.message_count + self._release_batch <= len(self._unsettled):
            self._schedule_flush()
        if self._demand.is_set():
            wanted = (
                queue.message_count <= self._high_water
                and queue.has_willing_consumer()
                and not self._alarmed()
            )
        else:
            wanted = queue.has_demand() and not self._alarmed()
        if wanted:
            if not self._demand.is_set():
                self._demand.set()
                self._no_demand.clear()
                if self._parked is not None:
                    # Consume from here rather than when the link's task next runs: a new
                    # consumer's first message comes one round trip sooner on a busy node.
                    self._consume_ok = self._consume(self._parked)
                    self._consume_ok.add_done_callback(_retrieved)
                    self._parked = None
        elif not self._no_demand.is_set():
            self._no_demand.set()
            self._demand.clear()

    def _forget_demand(self) -> None:
        """Back to the starting rule (a new connection starts only on an empty queue)."""
        self._demand.clear()
        self._no_demand.set()
        self.demand_may_have_changed(self.queue)

    # --- the connection -------------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            try:
                await self._connect_and_serve()
            except asyncio.CancelledError:
                raise
            except UpstreamIsThisQueue:
                log.info(
                    "federation upstream %s of %s is that queue itself: no link",
                    self.upstream.name,
                    self.queue.name,
                )
                with contextlib.suppress(ValueError):
                    self.queue.decorators.remove(self)
                return
            except Exception as error:  # noqa: BLE001 - every failure is the link's status
                self._set(LinkStatus.ERROR, _reason(error))
                log.info(
                    "federation link %s -> %s failed: %s",
                    self.upstream.name,
                    self.queue.name,
                    self.error,
                )
            finally:
                self._connection = self._parked = self._consume_ok = None
                self._to_disk = []
                self._held = False
                self._on_probation = None
                self.consuming = False
                self._unsettled.clear()
                self._forget_demand()
            await asyncio.sleep(self.upstream.reconnect_delay)

    def _set(self, status: LinkStatus, error: str | None = None) -> None:
        if status is not self.status or error != self.error:
            self.status, self.error, self.changed_at = status, error, time.time()

    async def _connect(self) -> UpstreamConnection:
        name = f"Federation link (upstream: {self.upstream.name}, policy: {self.policy})"
        failure: BaseException | None = None
        for uri in self.upstream.uris:
            self.uri = safe_uri(uri)
            try:
                return await UpstreamConnection.open(uri, name, _CONNECT_SECONDS)
            except Exception as error:  # noqa: BLE001 - the next URI may do
                failure = error
        assert failure is not None
        raise failure

    async def _connect_and_serve(self) -> None:
        self._set(LinkStatus.STARTING)
        connection = await self._connect()
        self._hop = Hop(self.uri, self.upstream_queue, self.upstream.trust_user_id)
        try:
            capabilities = connection.server_properties.get("capabilities")
            if not isinstance(capabilities, dict) or not capabilities.get("consumer_priorities"):
                raise UpstreamRefused("upstream_lacks_consumer_priorities")
            await self._open_queue(connection)
            await connection.basic_qos(max(0, self.upstream.prefetch_count))
            self._connection = connection
            self._set(LinkStatus.RUNNING)
            await self._follow_demand(connection)
        finally:
            await connection.close()

    async def _open_queue(self, connection: UpstreamConnection) -> None:
        """Make sure the upstream queue exists (declared like ours when missing)."""
        name = self.upstream_queue
        try:
            await connection.queue_declare(name, passive=True)
        except UpstreamClosed as closed:
            if closed.reply_code != _NOT_FOUND:
                raise
            await connection.open_channel()
            queue = self.queue
            await connection.queue_declare(
                name,
                durable=queue.durable,
                auto_delete=queue.auto_delete,
                arguments=queue.arguments,
            )

    def _consume(self, connection: UpstreamConnection) -> asyncio.Future[Any]:
        return connection.basic_consume(
            self.upstream_queue,
            self.upstream.tag(),
            no_ack=self._no_ack,
            arguments=self._consume_arguments,
            on_delivery=self._deliver,
        )

    async def _follow_demand(self, connection: UpstreamConnection) -> None:
        """Consume while there is demand here, cancel when it goes, until the channel closes."""
        tag = self.upstream.tag()
        closed = connection.closed
        # The consumer carries a mark of this run of the link: once consume-ok is back the
        # upstream has registered it, and if that upstream is this very queue, it is here.
        mark = f"{self.node}/{id(self)}/{time.monotonic_ns()}"
        self._consume_arguments = {"x-priority": -1, _LINK_MARK: mark}
        checked = False
        while True:
            # Parked: demand_may_have_changed may send basic.consume itself.
            self._parked = connection if checked else None
            try:
                await _first(self._demand.wait(), closed)
            finally:
                self._parked = None
            if not checked:
                self._on_probation = []
            consume_ok, self._consume_ok = self._consume_ok or self._consume(connection), None
            await consume_ok
            if not checked:
                checked = True
                held, self._on_probation = self._on_probation or [], None
                if any(c.arguments.get(_LINK_MARK) == mark for c in self.queue.consumers):
                    # What it delivered stays unacknowledged and goes back when we close.
                    self.is_this_queue = True
                    raise UpstreamIsThisQueue()
                for delivery in held:
                    self._deliver(*delivery)
            self.consuming = True
            await _first(self._no_demand.wait(), closed)
            await connection.basic_cancel(tag)
            self.consuming = False
            self._schedule_flush()  # nothing more comes: what was held back goes now

    # --- messages -------------------------------------------------------------------------------

    def _deliver(
        self,
        tag: int,
        redelivered: bool,
        exchange: str,
        routing_key: str,
        header: bytes,
        body: bytes,
    ) -> None:
        """An upstream message: into the local queue, acknowledged as the ack mode says."""
        if self._on_probation is not None:
            self._on_probation.append((tag, redelivered, exchange, routing_key, header, body))
            return
        queue = self.queue
        if queue.deleted or self.is_this_queue or self._stopping:
            return  # unacknowledged, it goes back to the upstream queue
        message = self._hop.message(exchange, routing_key, redelivered, header, body)
        self._outcome = _TAKEN
        queue.deliver(message, None if self._no_ack else self, tag)
        self.forwarded += 1
        if self._no_ack:
            return
        if self._outcome == _REFUSED:
            self._unsettled.append([tag, _REFUSED])
            self._schedule_flush()
        elif self._outcome == _PENDING:
            entry = [tag, _PENDING]
            self._unsettled.append(entry)
            # One wait for the disk per batch of deliveries, registered once the batch is in.
            if not self._to_disk:
                asyncio.get_running_loop().call_soon(self._wait_durable)
            self._to_disk.append(entry)
        else:
            self._unsettled.append([tag, _TAKEN])
            self._schedule_flush()

    # Confirming: what the local queue tells of the delivery just published into it.

    def stored(self, seq: int) -> None:
        if self._on_confirm:
            self._outcome = _PENDING

    def refused(self, seq: int) -> None:
        self._outcome = _REFUSED

    def _wait_durable(self) -> None:
        batch, self._to_disk = self._to_disk, []

        def durable(error: BaseException | None) -> None:
            state = _TAKEN if error is None else _REFUSED
            for entry in batch:
                entry[1] = state
            self._schedule_flush()

        self._when_durable(durable)

    def _schedule_flush(self) -> None:
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        """Acknowledge the settled deliveries at the head: runs of taken ones as one multiple
        ack, refused ones as nacks (they go back to the upstream queue)."""
        self._flush_scheduled = False
        unsettled, connection = self._unsettled, self._connection
        # While consuming, at least as many deliveries stay unacknowledged upstream as messages
        # wait here: with the upstream's prefetch, what waits here plus what is in flight stays
        # within prefetch-count, so a slow consumer slows the link down instead of filling the
        # queue past the high-water mark (and making the link cancel and consume again).
        keep = self.queue.message_count if self.consuming and self._paced else 0
        self._held = False
        settlements: list[tuple[int, bool]] = []
        while unsettled and unsettled[0][1] != _PENDING:
            if len(unsettled) <= keep:
                self._held = True
                break
            tag, state = unsettled.popleft()
            taken = state == _TAKEN
            if taken and settlements and settlements[-1][1]:
                settlements[-1] = (tag, True)
            else:
                settlements.append((tag, taken))
        if settlements and connection is not None:
            connection.settle(settlements)

    # --- status ---------------------------------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        """RabbitMQ's fields of /api/federation-links, and whether the link is pulling now."""
        found: dict[str, Any] = {
            "node": self.node,
            "queue": self.queue.name,
            "upstream_queue": self.upstream_queue,
            "consumer_tag": self.upstream.tag(),
            "type": "queue",
            "vhost": self.queue.vhost,
            "upstream": self.upstream.name,
            "id": link_id(self.queue.vhost, self.queue.name, self.upstream.name),
            "status": self.status.value,
            "uri": self.uri,
            "timestamp": time.strftime("%Y-%m-%d %-H:%M:%S", time.localtime(self.changed_at)),
        }
        if self.error is not None:
            found["error"] = self.error
        if self.status is LinkStatus.RUNNING:
            found["local_connection"] = "<internal>"
            found["demand"] = (
                "consuming" if self.consuming else "blocked" if self._alarmed() else "waiting"
            )
        return found


def _retrieved(future: asyncio.Future[Any]) -> None:
    """Mark a failure as seen: the link's task reports the connection's end itself."""
    if not future.cancelled():
        future.exception()


def link_id(vhost: str, queue: str, upstream: str) -> str:
    """A short stable id for the link (RabbitMQ shows an 8-digit hexadecimal hash)."""
    return f"{zlib.crc32(f'{vhost}/{queue}/{upstream}'.encode()):08x}"


async def _first(waiting: Any, closed: asyncio.Future[UpstreamClosed]) -> None:
    """Wait for `waiting`, unless the channel closes first (then raise why)."""
    task = asyncio.ensure_future(waiting)
    try:
        await asyncio.wait({task, closed}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        task.cancel()
    if closed.done() and not task.done():
        raise UpstreamRefused(f"upstream channel closed: {closed.result()}")


def _reason(error: BaseException) -> str:
    """The link's error as RabbitMQ names the common ones (econnrefused, auth_failure)."""
    if isinstance(error, UpstreamRefused):
        return str(error)
    causes = [error, *(arg for arg in error.args if isinstance(arg, BaseException))]
    if error.__cause__ is not None:
        causes.append(error.__cause__)
    for cause in causes:
        if isinstance(cause, OSError) and cause.errno == errno.ECONNREFUSED:
            return "econnrefused"
        if isinstance(cause, AuthenticationFailed):
            return "auth_failure"
    return str(error) or type(error).__name__
