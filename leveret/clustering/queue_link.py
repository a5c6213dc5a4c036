"""This node's link to another node's queues: one data connection, batched both ways.

Everything this node's clients do to queues homed on one node goes through its link:
publishes, consumers and requests in the order they were made (confirms come back in order),
and credit and settlements ahead of them. What the clients did in one turn of the event loop
goes out at the end of it in one write, but for the settlements a client's read brought: they
go as soon as that read is handled. A link connects on first use. When it breaks,
whatever waited on it fails at once (publishes are nacked, consumers cancelled, requests
answered "home node down"), and it reconnects in the background; until then the home node
counts as down. A request or consumer that finds it down has an attempt made at once and waits
for it, as RabbitMQ's nodes connect on demand: a home node that is back serves at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import ssl
from collections import deque
from collections.abc import Awaitable, Callable
from enum import Enum
from typing import Any

import grpc

from cluster.data_connection import DataConnection, DataRefused, open_data
from cluster.transport import LogThrottle, PeerChannels
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
from .down_entries import delivered_entry, entries_by_consumer, framed_entries

log = logging.getLogger(__name__)

LOCATE_PATH = "/leveret.queues.Queues/Locate"
# How long a first connection may take before the home node counts as down.
_CONNECT_SECONDS = 2.0
# Publishes beyond this many bytes of bodies start another frame of the same batch, so that no
# frame comes near the limit and the home node takes a large batch a piece at a time.
_FRAME_BYTES = 1 << 20
# Between attempts to reconnect: the backoff, cut short by an operation that needs the node,
# but never less than the gap (a publisher to a node that stays down would keep it trying).
_RETRY_SECONDS = (0.1, 0.2, 0.5)
_RETRY_GAP_SECONDS = 0.1
# Looked up once: reading an Enum class's member costs about 75 ns, and settle() runs for every
# acknowledgement.
_ACK, _REJECT, _REQUEUE = Outcome.ACK, Outcome.REJECT, Outcome.REQUEUE
# The numbers of a Down frame's lists (what ListFields names them by).
_CONFIRMS, _SUBSCRIBED, _DELIVERIES, _FRAMED, _CANCELLED, _CANCEL_OKS, _REPLIES = (
    queues_pb2.Down.DESCRIPTOR.fields_by_name[name].number
    for name in (
        "confirms",
        "subscribed",
        "deliveries",
        "framed_deliveries",
        "cancelled",
        "cancel_oks",
        "replies",
    )
)
# Publishes waiting for the connection beyond which their publishers are held back (they resume
# once the writer takes them).
_CONGESTED_PUBLISHES = 20_000
# While this node's clients have frames waiting for their next turn, a batch waits up to this
# many turns (unless it has this many publishes already) so that it goes in fewer, larger writes:
# each write costs both nodes a system call and a wake-up. An idle node writes at once.
_BUSY_TURNS = 2
_FULL_BATCH = 256


class _State(Enum):
    IDLE = "idle"  # not used yet
    CONNECTING = "connecting"  # a first connection, or the node called: operations wait
    UP = "up"
    DOWN = "down"  # broke: publishes are dropped; reconnecting in the background


# Opens the data connection to a node: (node, its cluster address, who gets what comes).
Opener = Callable[[str, str, "QueueLink"], Awaitable[DataConnection]]


class QueueLink:
    """The link to the node `node`; see the module docstring."""

    def __init__(
        self,
        node: str,
        address_of: Callable[[str], str | None],
        open_data: Opener,
        applied_index: Callable[[], int],
        busy: Callable[[], bool] = lambda: False,
        throttle: LogThrottle | None = None,
        input_arrived: Callable[[], None] = lambda: None,
        after_read: Callable[[Callable[[], None]], None] = lambda flush: None,
    ) -> None:
        self.node = node
        self._applied_index = applied_index
        self._busy = busy
        self._input_arrived = input_arrived
        self._after_read = after_read
        self._settlements_soon = False  # flush_settlements is due after the client's read
        self._waited_turns = 0
        self.generation = 0
        self.throttled: set[Any] = set()
        # What the home node said of the queues of its last confirmed publishes.
        self.queues_congested = False
        self._address_of = address_of
        self._open_data = open_data
        self._throttle = throttle or LogThrottle()
        self._state = _State.IDLE
        self._down = False  # (what `up` reads on every publish: an Enum compare costs more)
        self._connection: DataConnection | None = None
        # What waits for the connection: the frames of one batch, serialized whole at the end of
        # the loop's turn (or once the connection drains). Credit, settlements and cancels go
        # in a control frame ahead of the others, so that a consumer is not starved behind a
        # publisher's backlog (nothing orders them after publishes); the rest follow in order.
        # A batch without control or without other frames makes and sends none of that part:
        # a lone message waits on every step of its way.
        self._control_batch, self._control = _new_control()
        self._control_used = False  # (settlements are counted in their lists)
        self._frames, self._up = _new_frames()
        self._frames_used = False  # (publishes are counted in _publishes)
        # The frames the home node must not apply before it has applied what this node had
        # (those with publishes, subscribes or requests): the batch's earlier frames, each
        # sealed when its publishes filled it, and the current one when _up_stamp is set.
        self._sealed: list[queues_pb2.Up] = []
        self._up_stamp = False
        self._up_bytes = 0
        self._publishes = 0
        self._up_confirms = False  # whether a publish of the current frame awaits its confirm
        # The vhost and queues of the current frame's last publish (the next one to the same
        # queues leaves them out).
        self._route: tuple[str, list[str]] | None = None
        self._has_up = False
        self._flush_scheduled = False
        self._loop: asyncio.AbstractEventLoop | None = None  # (see _schedule_flush)
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()  # an operation needs the node: reconnect now
        self._node_called = False  # the node called this one during the current attempt
        self._attempt: asyncio.Future[bool] | None = None  # whether the next attempt connects
        # Publishes are numbered by their order on the connection, from 1 (queues.proto).
        self._publish_seq = 0
        # Publishes awaiting their confirm, in order: (link seq, waiter, the waiter's seq).
        self._awaiting: deque[tuple[int, ConfirmWaiter, int]] = deque()
        self._subscribers: dict[int, RemoteSubscriber] = {}
        self._subscribing: dict[int, asyncio.Future[int]] = {}
        # Consumers cancelled here whose end the home node has not confirmed yet.
        self._cancelling: dict[int, asyncio.Future[None]] = {}
        self._requests: dict[int, asyncio.Future[QueueStatus]] = {}
        self._ids = itertools.count(1)
        self._acks: list[int] = []
        self._rejects: list[int] = []
        self._requeues: list[int] = []

    # --- state --------------------------------------------------------------------------------

    @property
    def up(self) -> bool:
        if self._down:
            self._wake.set()  # (a publisher's need brings the next attempt forward)
            return False
        if self._task is None:
            self._start()
        return True

    @property
    def congested(self) -> bool:
        return self._publishes > _CONGESTED_PUBLISHES

    def _enter(self, state: _State) -> None:
        self._state = state
        self._down = state is _State.DOWN

    def node_is_up(self) -> None:
        """The node called this one (it is back, perhaps from a restart): a link that is down
        connects now, and what is sent meanwhile waits for it rather than being dropped."""
        self._node_called = True
        if self._down:
            self._enter(_State.CONNECTING)
            self._wake.set()

    def _start(self) -> None:
        self._enter(_State.CONNECTING)
        self._task = asyncio.get_running_loop().create_task(
            self._run(), name=f"queue-link-to-{self.node}"
        )

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._connection is not None:
            self._connection.close()
        self._fail()
        self._attempted(False)

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
        route = self._route
        if route is None or route[1] != queues or route[0] != vhost:
            publish.vhost = vhost
            publish.queues.extend(queues)
            self._route = (vhost, queues)
        if message.exchange:  # (a field left at its default costs nothing)
            publish.exchange = message.exchange
        publish.routing_key = message.routing_key
        publish.header = message.header
        publish.body = message.body
        if waiter is not None:
            self._awaiting.append((self._publish_seq, waiter, seq))
            self._up_confirms = True
        self._up_stamp = True
        self._publishes += 1
        self._up_bytes += len(message.body)
        if self._up_bytes > _FRAME_BYTES:
            self._seal_frame()
            self._sealed.append(self._up)
            self._up = self._frames.up.add()
            self._up_stamp = False
            self._up_bytes = 0
            self._route = None
        self._changed()

    def _seal_frame(self) -> None:
        """The current frame takes no more publishes: whether the home node must confirm them."""
        if not self._up_confirms and self._up.publishes:
            self._up.unconfirmed = True
        self._up_confirms = False

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
        framing: tuple[int, int] = (0, 0),
    ) -> int:
        await self.reach()
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
        subscribe.channel, subscribe.frame_max = framing
        if arguments:
            subscribe.arguments = encode_table(arguments)
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._subscribing[consumer_id] = future
        self._subscribers[consumer_id] = subscriber
        self._frames_used = self._up_stamp = True
        self._changed()
        try:
            return await future
        except BaseException:
            self._subscribers.pop(consumer_id, None)
            raise

    def direct_reply(self, address: str, message: Message) -> None:
        if self._down:
            return  # as RabbitMQ, which cannot reach the requester's node either
        if self._task is None:
            self._start()
        self._add_direct_reply(address, message)
        self._changed()

    async def direct_reply_mandatory(self, address: str, message: Message) -> bool:
        try:
            await self.reach()
        except LinkDown:
            return False
        request_id = next(self._ids)
        self._add_direct_reply(address, message).id = request_id
        future: asyncio.Future[QueueStatus] = asyncio.get_running_loop().create_future()
        self._requests[request_id] = future
        self._changed()
        try:
            return (await future).code == 0
        except LinkDown:
            return False

    def _add_direct_reply(self, address: str, message: Message) -> queues_pb2.DirectReply:
        self._frames_used = True
        reply = self._up.direct_replies.add()
        reply.address = address
        if message.exchange:
            reply.exchange = message.exchange
        reply.routing_key = message.routing_key
        reply.header = message.header
        reply.body = message.body
        return reply

    def cancel(self, consumer: int) -> asyncio.Future[None]:
        done = self._cancelling.get(consumer)
        if done is not None:
            return done
        done = asyncio.get_running_loop().create_future()
        if consumer not in self._subscribers:
            done.set_result(None)
            return done
        # The subscriber stays until the home node answers: what it delivered before it took
        # the cancel still reaches the client, as from a RabbitMQ queue before cancel-ok.
        self._cancelling[consumer] = done
        self._control.cancels.add().consumer = consumer
        self._control_used = True
        self._changed()
        return done

    def grant(self, consumer: int, credit: int) -> None:
        grant = self._control.credits.add()
        grant.consumer = consumer
        grant.credit = credit
        self._control_used = True
        self._changed()

    def settle(self, outcome: Outcome, deliveries: list[int]) -> None:
        if outcome is _ACK:
            self._acks.extend(deliveries)
        elif outcome is _REJECT:
            self._rejects.extend(deliveries)
        else:
            self._requeues.extend(deliveries)
        if not self._settlements_soon:
            # (an ack frees the home node to send the consumer another delivery: it goes
            # ahead of the rest of the turn; see PendingWrites.after_read)
            self._settlements_soon = True
            self._after_read(self.flush_settlements)
        self._changed()

    async def request(
        self,
        kind: RequestKind,
        vhost: str,
        queue: str,
        *,
        no_ack: bool = False,
        view_query: str = "",
        name: str = "",
        reason: str = "",
    ) -> QueueStatus:
        await self.reach()
        request_id = next(self._ids)
        request = self._up.requests.add()
        request.id = request_id
        request.kind = kind
        request.vhost = vhost
        request.queue = queue
        request.no_ack = no_ack
        request.view_query = view_query
        request.name = name
        request.reason = reason
        future: asyncio.Future[QueueStatus] = asyncio.get_running_loop().create_future()
        self._requests[request_id] = future
        self._frames_used = self._up_stamp = True
        self._changed()
        return await future

    async def reach(self) -> None:
        """Returns at once unless the link is down; then waits for an attempt to reconnect made
        now, and raises LinkDown if it fails."""
        if self._task is None:
            self._start()
        if not self._down:
            return
        attempt = self._attempt
        if attempt is None:
            attempt = self._attempt = asyncio.get_running_loop().create_future()
            self._wake.set()
        if not await asyncio.shield(attempt):
            raise LinkDown(self.node)

    # --- sending ------------------------------------------------------------------------------

    def _changed(self) -> None:
        self._has_up = True
        if not self._flush_scheduled:
            self._schedule_flush()

    def _schedule_flush(self) -> None:
        if not self._flush_scheduled:
            self._flush_scheduled = True
            loop = self._loop
            if loop is None:
                # Looked up once: asyncio.get_running_loop() makes a getpid system call.
                loop = self._loop = asyncio.get_running_loop()
            loop.call_soon(self._flush)

    def _flush(self) -> None:
        """Everything made in the loop's last turn goes in one write (or waits for the
        connection, or fails if the node is down)."""
        self._flush_scheduled = False
        state = self._state
        if state is _State.UP:
            connection = self._connection
            if self._has_up and connection is not None and connection.can_write:
                if (
                    self._waited_turns < _BUSY_TURNS
                    and self._publishes < _FULL_BATCH
                    and not self._acks
                    and self._busy()
                ):
                    # (acks never wait: each frees the home node to send the consumer another
                    # delivery, and a consumer at its prefetch waits for them)
                    self._waited_turns += 1
                    self._schedule_flush()
                    return
                self._waited_turns = 0
                data = _serialized(*self._take())
                if data:
                    connection.write(data)
        elif state is _State.IDLE:
            self._start()
        elif state is _State.DOWN and self._has_up:
            self._fail_batch(self._take()[1])

    def flush_settlements(self) -> None:
        """The control frame goes now, alone (its settlements, and any credit or cancel with
        them); the other frames wait for the end of the turn as before."""
        self._settlements_soon = False
        connection = self._connection
        if self._state is _State.UP and connection is not None and connection.can_write:
            control_batch = self._take_control()
            if control_batch is not None:
                connection.write(control_batch.SerializeToString())

    def _take_control(self) -> queues_pb2.ToHome | None:
        """The control frame waiting (alone in a ToHome), None if it says nothing; a new one
        begins."""
        if not (self._control_used or self._acks or self._rejects or self._requeues):
            return None
        control_batch, control = self._control_batch, self._control
        for outcome, ids in (
            (_ACK, self._acks),
            (_REJECT, self._rejects),
            (_REQUEUE, self._requeues),
        ):
            if ids:
                settle = control.settles.add()
                settle.outcome = outcome
                settle.deliveries.extend(ids)
                ids.clear()
        self._control_batch, self._control = _new_control()
        self._control_used = False
        return control_batch

    def _take(self) -> tuple[queues_pb2.ToHome | None, queues_pb2.ToHome | None]:
        """The batch waiting for the connection: its control frame (alone in a ToHome) and the
        frames after it, None for a part that says nothing; a new one begins."""
        control_batch, frames = self._take_control(), None
        if self._frames_used or self._publishes:
            self._seal_frame()
            frames, sealed = self._frames, self._sealed
            if self._up_stamp or sealed:
                applied = self._applied_index()
                for up in sealed:
                    up.applied = applied
                if self._up_stamp:
                    self._up.applied = applied
                self._sealed = []
            self._frames, self._up = _new_frames()
            self._frames_used = self._up_stamp = False
            self._up_bytes = self._publishes = 0
            self._route = None
        self._has_up = False
        if self.throttled:
            throttled, self.throttled = self.throttled, set()
            for publisher in throttled:
                publisher.release_throttle(self)
        return control_batch, frames

    # --- the connection (cluster.data_connection.Receiver) ------------------------------------

    async def _run(self) -> None:
        failures = 0  # in a row, for the backoff
        retried = False
        while True:
            self._node_called = False
            try:
                await self._connect_and_serve()
            except Exception:
                log.exception("queue link to %s failed", self.node)
            if self._state is not _State.UP and self._node_called and not retried:
                # The node called this one while the attempt failed: the attempt began before
                # the node was back (a connect that timed out, say). What waits for the node
                # waits for one more attempt, made now, rather than failing with this one.
                retried = True
                continue
            retried = False
            failures = 0 if self._state is _State.UP else failures + 1
            self._enter(_State.DOWN)
            self._connection = None
            self._fail()
            self._attempted(False)
            await self._until_next_attempt(failures)

    async def _until_next_attempt(self, failures: int) -> None:
        """The backoff after `failures` attempts in a row, cut short when an operation needs
        the node (after the gap)."""
        await asyncio.sleep(_RETRY_GAP_SECONDS)
        backoff = _RETRY_SECONDS[min(failures, len(_RETRY_SECONDS) - 1)] - _RETRY_GAP_SECONDS
        if backoff > 0 and not self._wake.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(backoff):
                    await self._wake.wait()
        self._wake.clear()

    def _attempted(self, connected: bool) -> None:
        """Tell the operations waiting for an attempt to reconnect how it went."""
        attempt, self._attempt = self._attempt, None
        if attempt is not None and not attempt.done():
            attempt.set_result(connected)

    async def _connect_and_serve(self) -> None:
        """One connection, until it ends."""
        address = self._address_of(self.node)
        if address is None:
            return
        try:
            async with asyncio.timeout(_CONNECT_SECONDS):
                connection = await self._open_data(self.node, address, self)
        except DataRefused as error:
            if self._throttle.allows(f"refused:{self.node}"):
                log.warning(
                    "node %s at %s refused our data connection: %s", self.node, address, error
                )
            return
        except (TimeoutError, OSError, grpc.aio.AioRpcError) as error:
            if self._throttle.allows(f"unreachable:{self.node}"):
                detail = error.code() if isinstance(error, grpc.aio.AioRpcError) else repr(error)
                log.info("queues of node %s are unreachable: %s", self.node, detail)
            return
        self._connection = connection
        self._enter(_State.UP)
        self._attempted(True)
        if self._has_up:
            self._schedule_flush()
        try:
            await connection.wait_closed()
        finally:
            connection.close()
        log.info("queue link to %s ended", self.node)

    def writable(self) -> None:
        if self._has_up:
            self._schedule_flush()

    def read_taken(self) -> None:
        """What a read from the home node brought this node's clients waits for the end of the
        turn like their other output: the home node writes a window of deliveries in pieces,
        and writing each piece to the clients as soon as it was read cost them and this node a
        write and a wake-up per piece (with both clients here, confirms and acks: 42.5k against
        45.1k msg/s, means of 9 alternating runs). The node keeps polling for a while (busy
        polling), as after any input."""
        self._input_arrived()

    def ended(self) -> None:
        """Nothing to do here: the link's task wakes up and fails what waited."""

    def received(self, down: queues_pb2.Down) -> None:
        # The fields a frame has, in one call (see HomeSession.receive).
        fields = {field.number: value for field, value in down.ListFields()}
        for confirm in fields.get(_CONFIRMS, ()):
            self._confirmed(confirm.upto, set(confirm.refused) if confirm.refused else None)
            self.queues_congested = confirm.congested
        for answer in fields.get(_SUBSCRIBED, ()):
            future = self._subscribing.pop(answer.consumer, None)
            if future is None or future.done():
                continue
            if answer.code:
                future.set_exception(AMQPError(answer.code, answer.text))
            else:
                future.set_result(answer.consumer)
        deliveries = fields.get(_DELIVERIES)
        if deliveries is not None:
            self._hand_over(deliveries)
        for batch in fields.get(_FRAMED, ()):
            self._hand_over_framed(batch)
        subscribers = self._subscribers
        for cancelled in fields.get(_CANCELLED, ()):
            subscriber = subscribers.pop(cancelled.consumer, None)
            if cancelled.consumer in self._cancelling:
                continue  # the client cancelled it too: its cancel-ok follows
            if subscriber is not None:
                subscriber.cancelled_by_home()
        for cancel_ok in fields.get(_CANCEL_OKS, ()):
            subscribers.pop(cancel_ok.consumer, None)
            done = self._cancelling.pop(cancel_ok.consumer, None)
            if done is not None and not done.done():
                done.set_result(None)
        for reply in fields.get(_REPLIES, ()):
            pending = self._requests.pop(reply.id, None)
            if pending is None or pending.done():
                continue
            pending.set_result(
                QueueStatus(
                    reply.code,
                    reply.text,
                    reply.message_count,
                    reply.consumer_count,
                    delivered_entry(reply.delivery) if reply.has_delivery else None,
                    reply.unacked_count,
                    reply.view,
                )
            )

    def _hand_over(self, deliveries: Any) -> None:
        for consumer, entries in entries_by_consumer(deliveries).items():
            self._hand_to(consumer, entries)

    def _hand_over_framed(self, batch: queues_pb2.FramedDeliveries) -> None:
        self._hand_to(batch.consumer, framed_entries(batch))

    def _hand_to(self, consumer: int, entries: list[QueueEntry]) -> None:
        subscriber = self._subscribers.get(consumer)
        if subscriber is not None:
            subscriber.delivered(entries)
        else:
            self._give_back([entry.seq for entry in entries])

    def _give_back(self, delivery_ids: list[int]) -> None:
        """Deliveries to a consumer cancelled meanwhile: those to settle go back to the queue."""
        requeued = [delivery_id for delivery_id in delivery_ids if delivery_id]
        if requeued:
            self._requeues.extend(requeued)
            self._changed()

    def _confirmed(self, upto: int, refused: set[int] | None) -> None:
        # Each waiter hears of a run of its publishes at once (mostly, one publisher's are all
        # the publishes a confirm covers).
        awaiting = self._awaiting
        run: list[int] = []
        run_waiter: ConfirmWaiter | None = None
        run_taken = True
        while awaiting and awaiting[0][0] <= upto:
            link_seq, waiter, seq = awaiting.popleft()
            taken = refused is None or link_seq not in refused
            if waiter is run_waiter and taken is run_taken:
                run.append(seq)
                continue
            if run_waiter is not None:
                run_waiter.confirmed(run, run_taken)
            run, run_waiter, run_taken = [seq], waiter, taken
        if run_waiter is not None:
            run_waiter.confirmed(run, run_taken)

    # --- failure ------------------------------------------------------------------------------

    def _fail(self) -> None:
        """Everything that waited on the connection that broke fails now."""
        self.generation += 1
        self.queues_congested = False
        self._control_batch, self._control = _new_control()
        self._frames, self._up = _new_frames()
        self._control_used = self._frames_used = self._up_stamp = False
        self._sealed = []
        self._up_confirms = False
        self._up_bytes = self._publishes = 0
        self._route = None
        self._publish_seq = 0  # the next connection's home session counts from 1 again
        self._has_up = False
        self._acks.clear()
        self._rejects.clear()
        self._requeues.clear()
        awaiting, self._awaiting = self._awaiting, deque()
        for _, waiter, seq in awaiting:
            waiter.confirmed([seq], False)
        subscribers, self._subscribers = self._subscribers, {}
        cancelling, self._cancelling = self._cancelling, {}
        for consumer, done in cancelling.items():
            subscribers.pop(consumer, None)  # its client asked for its end: it has it
            if not done.done():
                done.set_result(None)
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

    def _fail_batch(self, frames: queues_pb2.ToHome | None) -> None:
        """A batch made while the home node is down: nothing in it can be done."""
        if frames is not None and any(
            up.publishes or up.subscribes or up.requests for up in frames.up
        ):
            self._fail()


def _new_control() -> tuple[queues_pb2.ToHome, queues_pb2.Up]:
    """An empty control frame, in a ToHome of its own."""
    batch = queues_pb2.ToHome()
    return batch, batch.up.add()


def _new_frames() -> tuple[queues_pb2.ToHome, queues_pb2.Up]:
    """The frames after the control frame, the first of them made."""
    frames = queues_pb2.ToHome()
    return frames, frames.up.add()


def _serialized(control_batch: queues_pb2.ToHome | None, frames: queues_pb2.ToHome | None) -> bytes:
    """A batch as it goes: its control frame first, then the other frames (the frames of
    ToHome messages written one after the other are read as one batch)."""
    if control_batch is None:
        return frames.SerializeToString() if frames is not None else b""
    control = control_batch.SerializeToString()
    return control if frames is None else control + frames.SerializeToString()


class QueueLinks:
    """This node's links, one per home node, made on first use (the broker's `links`)."""

    def __init__(
        self,
        address_of: Callable[[str], str | None],
        peers: PeerChannels,
        applied_index: Callable[[], int],
        busy: Callable[[], bool],
        input_arrived: Callable[[], None],
        after_read: Callable[[Callable[[], None]], None],
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self._address_of = address_of
        self._peers = peers
        self._applied_index = applied_index
        self._busy = busy
        self._input_arrived = input_arrived
        self._after_read = after_read
        self._tls = tls
        self._throttle = LogThrottle()
        self._links: dict[str, QueueLink] = {}

    def heard_from(self, node: str) -> None:
        """`node` called this node: it is up."""
        link = self._links.get(node)
        if link is not None:
            link.node_is_up()

    def link(self, node: str) -> QueueLink:
        link = self._links.get(node)
        if link is None:
            link = self._links[node] = QueueLink(
                node,
                self._address_of,
                self._open,
                self._applied_index,
                self._busy,
                self._throttle,
                self._input_arrived,
                self._after_read,
            )
        return link

    async def _open(self, node: str, address: str, link: QueueLink) -> DataConnection:
        """Ask the node where it takes data connections (it may have restarted on another
        port since the last one), then connect there."""
        channel = self._peers.channel(address)
        own = None
        if channel.get_state() is not grpc.ChannelConnectivity.READY:
            # The shared channel may be waiting out its backoff, or still believe a node that
            # just came back is down: a channel of the link's own asks now, and a node that is
            # down refuses it at once.
            channel = own = self._peers.own_channel(address)
        try:
            location = await queues_pb2_grpc.QueuesStub(channel).Locate(
                queues_pb2.LocateRequest(), metadata=self._peers.metadata_for(LOCATE_PATH)
            )
        finally:
            if own is not None:
                await own.close()
        host = address.rpartition(":")[0].strip("[]")
        return await open_data(
            node, host, location.port, self._peers.signer, link, self._tls, _CONNECT_SECONDS
        )

    async def close(self) -> None:
        links, self._links = list(self._links.values()), {}
        for link in links:
            await link.close()
