"""This node's link to another node's queues: one Link stream, batched both ways.

Everything this node's clients do to queues homed on one node goes through its link:
publishes, consumers and requests in the order they were made (confirms come back in order),
and credit and settlements ahead of them. A link connects on first use. When it breaks,
whatever waited on it fails at once (publishes are nacked, consumers cancelled, requests
answered "home node down"), and it reconnects in the background; until then the home node
counts as down.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections import deque
from collections.abc import Callable
from enum import Enum
from typing import Any

import grpc

from proto import queues_pb2, queues_pb2_grpc

from ..amqp.errors import AMQPError
from ..amqp.fields import encode_table
from ..message import Message
from ..queues.entry import QueueEntry
from ..queues.remote import (
    ConfirmWaiter,
    LinkDown,
    Outcome,
    QueueStatus,
    RemoteSubscriber,
    RequestKind,
)
from ..queues.remote_consumer import CREDIT_WINDOW

log = logging.getLogger(__name__)

LINK_PATH = "/leveret.queues.Queues/Link"
# How long a first connection may take before the home node counts as down.
_CONNECT_SECONDS = 2.0
_RETRY_SECONDS = (0.2, 0.5, 1.0, 2.0)
# Publishes waiting for the stream beyond which their publishers are held back (they resume
# once the writer takes them).
_CONGESTED_PUBLISHES = 20_000


class _State(Enum):
    IDLE = "idle"  # not used yet
    CONNECTING = "connecting"  # operations wait for the stream
    UP = "up"
    DOWN = "down"  # broke; retrying in the background


class QueueLink:
    """The link to the node `node`; see the module docstring."""

    def __init__(
        self,
        node: str,
        address_of: Callable[[str], str | None],
        open_stream: Callable[[str], Any],
        applied_index: Callable[[], int],
    ) -> None:
        self.node = node
        self._applied_index = applied_index
        self.generation = 0
        self.throttled: set[Any] = set()
        self._address_of = address_of
        self._open_stream = open_stream
        self._state = _State.IDLE
        # What waits for the stream: one growing batch, taken whole by the writer each time the
        # previous write is done, so that a busy link sends few, large messages.
        self._up = queues_pb2.Up()
        # Credit, settlements and cancels go in a batch written first, so that a consumer is not
        # starved behind a publisher's backlog (nothing orders them after publishes).
        self._control = queues_pb2.Up()
        self._has_up = False
        self._flush_scheduled = False
        self._pending = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._publish_seq = 0
        # Publishes awaiting their confirm, in order: (link seq, waiter, the waiter's seq).
        self._awaiting: deque[tuple[int, ConfirmWaiter, int]] = deque()
        self._subscribers: dict[int, RemoteSubscriber] = {}
        self._subscribing: dict[int, asyncio.Future[int]] = {}
        self._requests: dict[int, asyncio.Future[QueueStatus]] = {}
        self._ids = itertools.count(1)
        self._acks: list[int] = []
        self._rejects: list[int] = []
        self._requeues: list[int] = []

    # --- state --------------------------------------------------------------------------------

    @property
    def up(self) -> bool:
        if self._state is _State.IDLE:
            self._start()
        return self._state is not _State.DOWN

    @property
    def congested(self) -> bool:
        return len(self._up.publishes) > _CONGESTED_PUBLISHES

    def _start(self) -> None:
        self._state = _State.CONNECTING
        self._task = asyncio.get_running_loop().create_task(
            self._run(), name=f"queue-link-to-{self.node}"
        )

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._fail()

    # --- operations ---------------------------------------------------------------------------

    def publish(
        self,
        vhost: str,
        queues: list[str],
        message: Message,
        waiter: ConfirmWaiter | None,
        seq: int,
    ) -> None:
        self._publish_seq += 1
        publish = self._up.publishes.add()
        publish.seq = self._publish_seq
        publish.vhost = vhost
        publish.queues.extend(queues)
        publish.exchange = message.exchange
        publish.routing_key = message.routing_key
        publish.header = message.header
        publish.body = message.body
        if waiter is not None:
            self._awaiting.append((self._publish_seq, waiter, seq))
        self._changed()

    async def subscribe(
        self,
        subscriber: RemoteSubscriber,
        vhost: str,
        queue: str,
        tag: str,
        *,
        no_ack: bool,
        exclusive: bool,
        priority: int,
        prefetch: int,
        arguments: dict[str, Any],
    ) -> int:
        self._require_up()
        consumer_id = next(self._ids)
        subscribe = self._up.subscribes.add()
        subscribe.consumer = consumer_id
        subscribe.vhost = vhost
        subscribe.queue = queue
        subscribe.tag = tag
        subscribe.no_ack = no_ack
        subscribe.exclusive = exclusive
        subscribe.priority = priority
        subscribe.prefetch = prefetch
        subscribe.credit = CREDIT_WINDOW
        if arguments:
            subscribe.arguments = encode_table(arguments)
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._subscribing[consumer_id] = future
        self._subscribers[consumer_id] = subscriber
        self._changed()
        try:
            return await future
        except BaseException:
            self._subscribers.pop(consumer_id, None)
            raise

    def cancel(self, consumer: int) -> None:
        if self._subscribers.pop(consumer, None) is not None:
            self._control.cancels.add().consumer = consumer
            self._changed()

    def grant(self, consumer: int, credit: int) -> None:
        grant = self._control.credits.add()
        grant.consumer = consumer
        grant.credit = credit
        self._changed()

    def settle(self, outcome: Outcome, delivery: int) -> None:
        if outcome is Outcome.ACK:
            self._acks.append(delivery)
        elif outcome is Outcome.REJECT:
            self._rejects.append(delivery)
        else:
            self._requeues.append(delivery)
        self._changed()

    async def request(
        self, kind: RequestKind, vhost: str, queue: str, *, no_ack: bool = False
    ) -> QueueStatus:
        self._require_up()
        request_id = next(self._ids)
        request = self._up.requests.add()
        request.id = request_id
        request.kind = kind
        request.vhost = vhost
        request.queue = queue
        request.no_ack = no_ack
        future: asyncio.Future[QueueStatus] = asyncio.get_running_loop().create_future()
        self._requests[request_id] = future
        self._changed()
        return await future

    def _require_up(self) -> None:
        if not self.up:
            raise LinkDown(self.node)

    # --- sending ------------------------------------------------------------------------------

    def _changed(self) -> None:
        self._has_up = True
        if self._state is _State.UP:
            self._pending.set()  # the writer takes it on its next turn
        elif not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._not_up_yet)

    def _not_up_yet(self) -> None:
        """Work made while there is no stream: it waits for one, or fails if the node is down."""
        self._flush_scheduled = False
        if self._state is _State.IDLE:
            self._start()
        elif self._state is _State.DOWN and self._has_up:
            self._fail_batch(self._take()[1])

    def _take(self) -> tuple[queues_pb2.Up, queues_pb2.Up]:
        """What waits for the stream, as (control, the rest)."""
        control, up = self._control, self._up
        for outcome, ids in (
            (Outcome.ACK, self._acks),
            (Outcome.REJECT, self._rejects),
            (Outcome.REQUEUE, self._requeues),
        ):
            if ids:
                settle = control.settles.add()
                settle.outcome = outcome
                settle.deliveries.extend(ids)
                ids.clear()
        self._up, self._control = queues_pb2.Up(), queues_pb2.Up()
        self._has_up = False
        return control, up

    # --- the stream ---------------------------------------------------------------------------

    async def _run(self) -> None:
        failures = 0  # in a row, for the backoff
        while True:
            try:
                await self._connect_and_serve()
            except Exception:
                log.exception("queue link to %s failed", self.node)
            failures = 0 if self._state is _State.UP else failures + 1
            self._state = _State.DOWN
            self._fail()
            await asyncio.sleep(_RETRY_SECONDS[min(failures, len(_RETRY_SECONDS) - 1)])
            self._state = _State.CONNECTING

    async def _connect_and_serve(self) -> None:
        """One stream, until it breaks."""
        address = self._address_of(self.node)
        if address is None:
            return
        try:
            call, channel = self._open_stream(address)
            await asyncio.wait_for(channel.channel_ready(), _CONNECT_SECONDS)
        except (TimeoutError, grpc.aio.AioRpcError) as error:
            log.info("queues of node %s are unreachable: %s", self.node, error)
            return
        self._state = _State.UP
        writer = asyncio.get_running_loop().create_task(self._write(call))
        try:
            async for down in call:
                self._receive(down)
            log.info("queue link to %s ended", self.node)
        except grpc.aio.AioRpcError as error:
            log.info("queue link to %s broke: %s", self.node, error.code())
        finally:
            writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await writer
            call.cancel()

    async def _write(self, call: Any) -> None:
        while True:
            while not self._has_up:
                self._pending.clear()
                await self._pending.wait()
            control, up = self._take()
            if self.throttled:
                throttled, self.throttled = self.throttled, set()
                for publisher in throttled:
                    publisher.release_throttle(self)
            try:
                if control.settles or control.credits or control.cancels:
                    await call.write(control)
                if up.publishes or up.subscribes or up.requests:
                    up.applied = self._applied_index()
                    await call.write(up)
            except Exception as error:  # noqa: BLE001 - the stream broke; the reader ends it
                log.info("queue link to %s could not write: %r", self.node, error)
                call.cancel()
                return

    def _receive(self, down: queues_pb2.Down) -> None:
        for confirm in down.confirms:
            self._confirmed(confirm.upto, set(confirm.refused) if confirm.refused else None)
        for answer in down.subscribed:
            future = self._subscribing.pop(answer.consumer, None)
            if future is None or future.done():
                continue
            if answer.code:
                future.set_exception(AMQPError(answer.code, answer.text))
            else:
                future.set_result(answer.consumer)
        subscribers = self._subscribers
        for delivery in down.deliveries:
            subscriber = subscribers.get(delivery.consumer)
            if subscriber is not None:
                subscriber.delivered(_entry(delivery))
            elif delivery.id:
                self._requeues.append(delivery.id)  # cancelled meanwhile
                self._changed()
        for cancelled in down.cancelled:
            subscriber = subscribers.pop(cancelled.consumer, None)
            if subscriber is not None:
                subscriber.cancelled_by_home()
        for reply in down.replies:
            pending = self._requests.pop(reply.id, None)
            if pending is None or pending.done():
                continue
            pending.set_result(
                QueueStatus(
                    reply.code,
                    reply.text,
                    reply.message_count,
                    reply.consumer_count,
                    _entry(reply.delivery) if reply.has_delivery else None,
                    reply.unacked_count,
                )
            )

    def _confirmed(self, upto: int, refused: set[int] | None) -> None:
        awaiting = self._awaiting
        while awaiting and awaiting[0][0] <= upto:
            link_seq, waiter, seq = awaiting.popleft()
            waiter.remote_confirmed(seq, refused is None or link_seq not in refused)

    # --- failure ------------------------------------------------------------------------------

    def _fail(self) -> None:
        """Everything that waited on the stream that broke fails now."""
        self.generation += 1
        self._up, self._control = queues_pb2.Up(), queues_pb2.Up()
        self._has_up = False
        self._acks.clear()
        self._rejects.clear()
        self._requeues.clear()
        awaiting, self._awaiting = self._awaiting, deque()
        for _, waiter, seq in awaiting:
            waiter.remote_confirmed(seq, False)
        subscribers, self._subscribers = self._subscribers, {}
        subscribing, self._subscribing = self._subscribing, {}
        requests, self._requests = self._requests, {}
        pending: list[asyncio.Future[Any]] = [*subscribing.values(), *requests.values()]
        for future in pending:
            if not future.done():
                future.set_exception(LinkDown(self.node))
        for subscriber in subscribers.values():
            subscriber.cancelled_by_home()
        throttled, self.throttled = self.throttled, set()
        for publisher in throttled:
            publisher.release_throttle(self)

    def _fail_batch(self, up: queues_pb2.Up) -> None:
        """A batch made while the home node is down: nothing in it can be done."""
        if up.publishes or up.subscribes or up.requests:
            self._fail()


def _entry(delivery: queues_pb2.Delivery) -> QueueEntry:
    message = Message(delivery.exchange, delivery.routing_key, delivery.header, delivery.body)
    return QueueEntry(delivery.id, message, delivery.redelivered)


class QueueLinks:
    """This node's links, one per home node, made on first use (the broker's `links`)."""

    def __init__(
        self,
        address_of: Callable[[str], str | None],
        peers: Any,
        applied_index: Callable[[], int],
    ) -> None:
        self._address_of = address_of
        self._peers = peers
        self._applied_index = applied_index
        self._links: dict[str, QueueLink] = {}

    def link(self, node: str) -> QueueLink:
        link = self._links.get(node)
        if link is None:
            link = self._links[node] = QueueLink(
                node, self._address_of, self._open_stream, self._applied_index
            )
        return link

    def _open_stream(self, address: str) -> tuple[Any, grpc.aio.Channel]:
        channel = self._peers.channel(address)
        stub = queues_pb2_grpc.QueuesStub(channel)
        return stub.Link(metadata=self._peers.metadata_for(LINK_PATH)), channel

    async def close(self) -> None:
        links, self._links = list(self._links.values()), {}
        for link in links:
            await link.close()
