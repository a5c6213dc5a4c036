"""The home node's side of one link: another node's clients using this node's queues.

Batches from the link are applied in order: publishes go into local queues (confirmed back in
order, after the fsync when one was needed), consumers become ordinary consumers of the queues
whose sink is this session, and settlements and requests act on the queues. What goes back is
gathered into one batch, written once the batch read from the link is applied (or at the end of
the loop's turn, for what timers and local events produce), or as soon as it holds a few dozen
deliveries, unless the connection is still draining the last one (deliveries are bounded by
credit meanwhile); deliveries to a consumer that named its channel go framed for it. When the
link ends, every delivery not settled on it is requeued and its consumers go, as when a channel
closes.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from proto import queues_pb2

from ..amqp.constants import FRAME_MIN_SIZE
from ..amqp.errors import AMQPError, ReplyCode
from ..amqp.fields import decode_table
from ..amqp.frames import framed_content
from ..message import Message
from ..mgmt.home_queue_view import queue_view
from ..mgmt.node_clients import clients_view, close_connection
from ..queues.classic import ClassicQueue, Consumer
from ..queues.entry import QueueEntry
from ..queues.remote import Outcome, RequestKind

if TYPE_CHECKING:
    from ..broker import Broker

log = logging.getLogger(__name__)

# A delivery sent on the link and not yet settled: its queue, entry and consumer (None: a get).
_Unsettled = tuple[ClassicQueue, QueueEntry, Consumer | None]
# Deliveries beyond this many bytes of bodies start another frame of the same batch.
_FRAME_BYTES = 1 << 20
# A batch goes out as soon as it holds half the delivering consumer's prefetch window (within
# these bounds), so that the client's node works on one part while this one makes the next.
# Written only at the end, a consumer's whole window travelled as one lump, and each node waited
# for the other: with prefetch 100 and both clients on one node, 1.2x the consumed msg/s in
# alternating runs of the two ways. Written every 32, a window of 100 went in four pieces, each
# costing both nodes system calls and a wake-up: in halves, 26.3k against 24.9k msg/s (prefetch
# 100, medians of 6 alternating runs), and with no limit (auto-ack) 41.6k against 39.8k.
_FEWEST_DELIVERIES_PER_WRITE = 32
_MOST_DELIVERIES_PER_WRITE = 64
# The numbers of an Up frame's lists (what ListFields names them by).
_PUBLISHES, _SUBSCRIBES, _CREDITS, _SETTLES, _CANCELS, _REQUESTS, _DIRECT_REPLIES = (
    queues_pb2.Up.DESCRIPTOR.fields_by_name[name].number
    for name in (
        "publishes",
        "subscribes",
        "credits",
        "settles",
        "cancels",
        "requests",
        "direct_replies",
    )
)


class Outlet(Protocol):
    """Where a session's batches go (cluster.data_connection.DataConnection)."""

    @property
    def can_write(self) -> bool: ...

    def write(self, data: bytes) -> None: ...

    def close(self) -> None: ...


class LinkedConsumer:
    """The sink of a consumer whose client is on another node: deliveries go into the link."""

    __slots__ = ("credit", "frame_max", "id", "remote_channel", "session", "write_every")

    def __init__(self, session: HomeSession, subscribe: queues_pb2.Subscribe) -> None:
        self.session = session
        self.id = subscribe.consumer
        self.credit = subscribe.credit
        # The client's channel there, whose frames this node makes (0: the other node does,
        # as it does for a frame_max no AMQP connection can have).
        framed = subscribe.frame_max >= FRAME_MIN_SIZE
        self.remote_channel = subscribe.channel if framed else 0
        self.frame_max = subscribe.frame_max
        self.write_every = _deliveries_per_write(subscribe.prefetch)

    @property
    def client_node(self) -> str:
        """The node of the consumer's client (what the management API shows of its channel)."""
        return self.session.peer

    def can_deliver(self) -> bool:
        return self.credit > 0 and self.session.open

    def write_blocked(self) -> bool:
        return self.credit <= 0

    def framing(self) -> tuple[int, int]:
        return self.remote_channel, self.frame_max

    def deliver(self, consumer: Consumer, queue: ClassicQueue, entry: QueueEntry) -> None:
        self.credit -= 1
        self.session.send_delivery(self, queue, entry, consumer)

    def room(self, wanted: int) -> int:
        return min(wanted, self.credit) if self.session.open else 0

    def deliver_all(
        self, consumer: Consumer, queue: ClassicQueue, entries: Sequence[QueueEntry]
    ) -> None:
        for entry in entries:
            self.deliver(consumer, queue, entry)

    def consumer_cancelled_by_node(self, consumer: Consumer) -> None:
        self.session.consumer_gone(self.id)


def _deliveries_per_write(prefetch: int) -> int:
    """After how many deliveries to a consumer with this prefetch (0: no limit) a batch goes."""
    if not prefetch:
        return _MOST_DELIVERIES_PER_WRITE
    return min(_MOST_DELIVERIES_PER_WRITE, max(_FEWEST_DELIVERIES_PER_WRITE, prefetch // 2))


class _FramedColumns:
    """A consumer's framed deliveries in the frame being filled (queues.proto's FramedDeliveries),
    gathered in Python lists: one takes an entry for a quarter of what a protobuf list does, and
    goes into the frame in one extend."""

    __slots__ = ("exchange_and_keys", "framed", "ids", "redelivered")

    def __init__(self) -> None:
        self.ids: list[int] = []
        self.redelivered: list[int] = []
        self.exchange_and_keys: list[bytes] = []
        self.framed: list[bytes] = []


class HomeSession:
    """Applies one link's batches to this node's queues and gathers what goes back."""

    def __init__(self, broker: Broker, peer: str, outlet: Outlet) -> None:
        self.broker = broker
        self.peer = peer
        self.open = True
        self.failed = False  # the link must end: what it carried could not be made durable
        self._outlet = outlet
        self._consumers: dict[int, Consumer] = {}
        self._unsettled: dict[int, _Unsettled] = {}
        self._next_delivery = 1
        # The batch going back: frames of a FromHome, serialized whole when it goes.
        self._frames = queues_pb2.FromHome()
        self._out = self._frames.down.add()
        self._out_bytes = 0
        # The framed deliveries of the frame being filled, by consumer.
        self._framed: dict[int, _FramedColumns] = {}
        self._out_deliveries = 0
        self._has_out = False
        self._flush_scheduled = False
        # Publishes are numbered by their order on the link, from 1 (queues.proto): the last
        # one applied.
        self._published = 0
        # Publishes are confirmed in order: the highest taken so far, those refused, and how
        # many fsyncs are still awaited before the next confirm may go.
        self._taken_upto = 0
        self._refused: list[int] = []
        self._syncs_pending = 0
        self._needs_sync = False  # a publish of the batch being applied went to disk
        self._confirming = True  # whether the batch being applied waits for its confirm
        # Whether a queue the last batch went to has a backlog its consumers fall behind on.
        self._congested = False

    @property
    def consumer_count(self) -> int:
        """The consumers the peer's clients hold on this node's queues through the link."""
        return len(self._consumers)

    # --- the link's batches -------------------------------------------------------------------

    def receive(self, up: queues_pb2.Up) -> None:
        # The fields a frame has, in one call: reading each of its seven lists cost 2.1 µs a
        # frame (1.2 this way), and a lone message pays that on its way.
        fields = {field.number: value for field, value in up.ListFields()}
        publishes = fields.get(_PUBLISHES)
        if publishes is not None:
            self._publish(publishes, not up.unconfirmed)
        for subscribe in fields.get(_SUBSCRIBES, ()):
            self._subscribe(subscribe)
        for credit in fields.get(_CREDITS, ()):
            self._grant(credit.consumer, credit.credit)
        for settle in fields.get(_SETTLES, ()):
            self._settle(Outcome(settle.outcome), settle.deliveries)
        for cancel in fields.get(_CANCELS, ()):
            self._cancel(cancel.consumer)
        for request in fields.get(_REQUESTS, ()):
            self._request(request)
        for reply in fields.get(_DIRECT_REPLIES, ()):
            self._direct_reply(reply)

    def close(self) -> None:
        """The link ended: its consumers go, and what it had not settled is requeued."""
        if not self.open:
            return
        self.open = False
        consumers, self._consumers = self._consumers, {}
        unsettled, self._unsettled = self._unsettled, {}
        by_queue: dict[ClassicQueue, list[QueueEntry]] = {}
        for queue, entry, consumer in unsettled.values():
            if consumer is not None:
                consumer.in_flight -= 1
            by_queue.setdefault(queue, []).append(entry)
        for queue, entries in by_queue.items():
            if not queue.deleted:
                queue.requeue(entries)
        for consumer in consumers.values():
            consumer.queue.remove_consumer(consumer)

    # --- publishing ---------------------------------------------------------------------------

    def _publish(self, publishes: Any, confirm: bool) -> None:
        """Deliver `publishes` and, when they wait for it or the queues' congestion changed,
        confirm them (the highest seq confirms the publishes of earlier frames too)."""
        self._needs_sync = False
        self._confirming = confirm
        upto = self._published
        congested = False
        queues: list[ClassicQueue] = []
        for publish in publishes:
            upto += 1
            names = publish.queues
            if names:  # else the queues of the publish before it
                vhost = self.broker.vhosts.get(publish.vhost)
                found = (vhost.queues.get(name) for name in names) if vhost is not None else ()
                queues = [queue for queue in found if queue is not None]
            if not queues:
                continue
            message = Message(publish.exchange, publish.routing_key, publish.header, publish.body)
            for queue in queues:
                if not queue.deleted:
                    queue.deliver(message, self, upto)
                    congested = congested or queue.congested
        self._published = upto
        if congested != self._congested:
            self._congested = congested
            confirm = True
        if not confirm:
            return
        stores = self.broker.stores
        if self._needs_sync and stores is not None:
            self._syncs_pending += 1
            stores.committer.call_when_durable(lambda error: self._synced(upto, error))
        elif not self._syncs_pending:
            self._confirm(upto)

    # Confirming: what the queues tell of the publishes of a batch.

    def stored(self, seq: int) -> None:
        self._needs_sync = True

    def refused(self, seq: int) -> None:
        if not self._confirming:
            return  # nobody waits to hear it
        refused = self._refused
        if not refused or refused[-1] != seq:  # once, if several of its queues refuse it
            refused.append(seq)

    def _synced(self, upto: int, error: BaseException | None) -> None:
        self._syncs_pending -= 1
        if not self.open:
            return
        if error is not None:
            # Not on disk: the link breaks, and the other node nacks what it had not confirmed.
            log.error("could not make messages from %s durable: %s", self.peer, error)
            self.failed = True
            self._outlet.close()
            return
        self._confirm(upto)

    def _confirm(self, upto: int) -> None:
        if upto <= self._taken_upto:
            return
        self._taken_upto = upto
        confirm = self._out.confirms.add()
        confirm.upto = upto
        confirm.congested = self._congested
        if self._refused:
            confirm.refused.extend(self._refused)
            self._refused.clear()
        self._schedule_flush()

    # --- consumers ----------------------------------------------------------------------------

    def _subscribe(self, subscribe: queues_pb2.Subscribe) -> None:
        answer = self._out.subscribed.add()
        answer.consumer = subscribe.consumer
        self._schedule_flush()
        try:
            queue = self._queue(subscribe.vhost, subscribe.queue)
            if queue.has_exclusive_consumer() or (subscribe.exclusive and queue.consumer_count):
                raise AMQPError(
                    ReplyCode.ACCESS_REFUSED,
                    f"queue '{queue.name}' in vhost '{queue.vhost}' in exclusive use",
                )
        except AMQPError as error:
            answer.code, answer.text = error.code, error.text
            return
        arguments = decode_table(subscribe.arguments, 0)[0] if subscribe.arguments else {}
        sink = LinkedConsumer(self, subscribe)
        consumer = Consumer(
            subscribe.tag,
            sink,
            queue,
            no_ack=subscribe.no_ack,
            exclusive=subscribe.exclusive,
            priority=subscribe.priority,
            prefetch=subscribe.prefetch,
            arguments=arguments,
        )
        self._consumers[subscribe.consumer] = consumer
        try:
            queue.add_consumer(consumer)  # a stream refuses an x-stream-offset it cannot read
        except AMQPError as error:
            del self._consumers[subscribe.consumer]
            answer.code, answer.text = error.code, error.text

    def _grant(self, consumer_id: int, credit: int) -> None:
        consumer = self._consumers.get(consumer_id)
        if consumer is not None:
            consumer.sink.credit += credit  # type: ignore[attr-defined]
            consumer.queue.dispatch()

    def _cancel(self, consumer_id: int) -> None:
        consumer = self._consumers.pop(consumer_id, None)
        if consumer is not None:
            consumer.queue.remove_consumer(consumer)
        self._out.cancel_oks.add().consumer = consumer_id
        self._schedule_flush()

    def consumer_gone(self, consumer_id: int) -> None:
        """Its queue was deleted: the other node cancels it towards its client."""
        if self._consumers.pop(consumer_id, None) is not None and self.open:
            self._out.cancelled.add().consumer = consumer_id
            self._schedule_flush()

    def send_delivery(
        self, sink: LinkedConsumer, queue: ClassicQueue, entry: QueueEntry, consumer: Consumer
    ) -> None:
        if sink.remote_channel:
            self._add_framed(sink, queue, entry, consumer)
        else:
            delivery = self._out.deliveries.add()
            self._fill(delivery, queue, entry, consumer, consumer.no_ack)
            delivery.consumer = sink.id
        if self._flush_scheduled:  # only the flag is left to set: no call per delivery
            self._has_out = True
        else:
            self._schedule_flush()
        self._out_deliveries += 1
        if self._out_deliveries >= sink.write_every:
            # (Whatever went into the batch before is whole: an answer is filled in before the
            # queue it names can dispatch.)
            self.flush_now()

    def _add_framed(
        self, sink: LinkedConsumer, queue: ClassicQueue, entry: QueueEntry, consumer: Consumer
    ) -> None:
        """A delivery whose content is framed here for the client's channel: it costs the
        client's node (which also reads and writes its clients' sockets, and is the busier one)
        only the basic.deliver in front. It joins the consumer's columns of the frame."""
        columns = self._framed.get(sink.id)
        if columns is None:
            columns = self._framed[sink.id] = _FramedColumns()
        delivery_id = 0
        if not consumer.no_ack:
            delivery_id = self._next_delivery
            self._next_delivery = delivery_id + 1
            self._unsettled[delivery_id] = (queue, entry, consumer)
        if entry.redelivered:
            columns.redelivered.append(len(columns.ids))
        columns.ids.append(delivery_id)
        message = entry.message
        columns.exchange_and_keys.append(message.exchange_and_key)
        columns.framed.append(
            framed_content(sink.remote_channel, message.header, message.body, sink.frame_max)
        )
        self._count_out(len(message.body))

    def _fill(
        self,
        delivery: queues_pb2.Delivery,
        queue: ClassicQueue,
        entry: QueueEntry,
        consumer: Consumer | None,
        settled: bool,
    ) -> None:
        """A delivery that goes unframed: to a consumer that named no channel, or a get's."""
        if not settled:
            delivery_id = self._next_delivery
            self._next_delivery = delivery_id + 1
            self._unsettled[delivery_id] = (queue, entry, consumer)
            delivery.id = delivery_id
        message = entry.message
        delivery.redelivered = entry.redelivered
        delivery.exchange = message.exchange
        delivery.routing_key = message.routing_key
        delivery.header = message.header
        delivery.body = message.body
        self._count_out(len(message.body))

    def _count_out(self, size: int) -> None:
        self._out_bytes += size
        if self._out_bytes > _FRAME_BYTES:
            self._new_out()

    def _new_out(self) -> None:
        """The frame being filled is full, or goes: its framed deliveries go into it, and the
        next frame begins."""
        out = self._out
        for consumer, columns in self._framed.items():
            batch = out.framed_deliveries.add()
            batch.consumer = consumer
            batch.ids.extend(columns.ids)
            batch.redelivered.extend(columns.redelivered)
            batch.exchange_and_keys.extend(columns.exchange_and_keys)
            batch.framed.extend(columns.framed)
        self._framed = {}
        self._out = self._frames.down.add()
        self._out_bytes = 0

    # --- settling -----------------------------------------------------------------------------

    def _settle(self, outcome: Outcome, deliveries: Any) -> None:
        unsettled = self._unsettled
        ack, requeue = outcome is Outcome.ACK, outcome is Outcome.REQUEUE
        # The queues touched (to dispatch to once), with the entries to requeue.
        touched: dict[ClassicQueue, list[QueueEntry]] = {}
        last: ClassicQueue | None = None
        for delivery_id in deliveries:
            record = unsettled.pop(delivery_id, None)
            if record is None:
                continue
            queue, entry, consumer = record
            if consumer is not None:
                consumer.in_flight -= 1
            if queue.deleted:
                continue
            if requeue:
                touched.setdefault(queue, []).append(entry)
                continue
            if ack:
                queue.settle(entry)
            else:
                queue.reject(entry)
            if queue is not last:  # (a batch's deliveries mostly come from one queue)
                touched.setdefault(queue, [])
                last = queue
        for queue, entries in touched.items():
            if requeue:
                queue.requeue(entries)
            elif not queue.deleted:
                queue.dispatch()

    # --- direct reply-to ----------------------------------------------------------------------

    def _direct_reply(self, reply: queues_pb2.DirectReply) -> None:
        requester = self.broker.direct_reply.requester(reply.address)
        if requester is not None:
            message = Message(reply.exchange, reply.routing_key, reply.header, reply.body)
            requester.deliver_reply(message)
        if reply.id:  # the sender returns it to its publisher if the requester is gone
            answer = self._out.replies.add()
            answer.id = reply.id
            if requester is None:
                answer.code, answer.text = ReplyCode.NO_ROUTE, "NO_ROUTE"
            self._schedule_flush()

    # --- requests -----------------------------------------------------------------------------

    def _request(self, request: queues_pb2.Request) -> None:
        reply = self._out.replies.add()
        reply.id = request.id
        self._schedule_flush()
        if request.kind == RequestKind.CLIENTS:
            reply.view = clients_view(self.broker)
            return
        if request.kind == RequestKind.CLOSE_CONNECTION:
            if not close_connection(self.broker, request.name, request.reason):
                reply.code, reply.text = ReplyCode.NOT_FOUND, f"no connection '{request.name}'"
            return
        try:
            queue = self._queue(request.vhost, request.queue)
        except AMQPError as error:
            reply.code, reply.text = error.code, error.text
            return
        kind = request.kind
        try:
            if kind == RequestKind.GET:
                queue.touch()
                entry = queue.get(request.no_ack)
                if entry is not None:
                    reply.has_delivery = True
                    self._fill(reply.delivery, queue, entry, None, request.no_ack)
            elif kind == RequestKind.PURGE:
                reply.message_count = queue.purge()
                return
            elif kind == RequestKind.STATUS:
                queue.touch()
            elif kind == RequestKind.VIEW:
                reply.view = queue_view(self.broker, queue, request.view_query)
        except AMQPError as error:  # what the queue's type does not support (streams)
            reply.code, reply.text = error.code, error.text
            return
        reply.message_count = queue.message_count
        reply.consumer_count = queue.consumer_count
        reply.unacked_count = queue.unacked

    def _queue(self, vhost_name: str, name: str) -> ClassicQueue:
        vhost = self.broker.vhosts.get(vhost_name)
        queue = vhost.queues.get(name) if vhost is not None else None
        if queue is None or queue.deleted:
            raise AMQPError(ReplyCode.NOT_FOUND, f"no queue '{name}' in vhost '{vhost_name}'")
        return queue

    # --- sending back -------------------------------------------------------------------------

    def _schedule_flush(self) -> None:
        self._has_out = True
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self.broker.pending_writes.add(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        self.flush_now()

    def flush_now(self) -> None:
        """Write what waits, if the connection takes it (it says when it drained)."""
        if not self._has_out or not self.open or self.failed or not self._outlet.can_write:
            return
        frames = self._frames
        self._frames = queues_pb2.FromHome()
        self._new_out()  # (what it seals goes into `frames`)
        self._out_deliveries = 0
        self._has_out = False
        stores = self.broker.stores
        if stores is not None:
            # Delivery marks reach the OS before the deliveries leave this node (see the
            # client protocol's flush): after a kill -9 their messages come back redelivered.
            stores.committer.flush()
        self._outlet.write(frames.SerializeToString())
