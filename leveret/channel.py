"""One AMQP channel's semantics: declares, consuming, acknowledgements and transactions; what it
publishes goes through its publisher (publishing.py)."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from . import declare_rules as rules
from . import declares
from .amqp import methods as m
from .amqp.errors import AMQPError, ReplyCode, access_refused, not_found, precondition_failed
from .amqp.fields import argument_types
from .amqp.frames import (
    deliver_framed,
    deliver_frames,
    get_ok_frames,
    method_frame,
    shortstr,
)
from .consumer_timeout import DeliveryMarks
from .declare_rules import FIELD_TYPE_NAMES
from .direct_reply import REPLY_QUEUE
from .message import Message
from .metadata import MetadataStore
from .names import consumer_tag as new_consumer_tag
from .publishing import ChannelPublisher
from .queues import stream_rules
from .queues.classic import ClassicQueue, Consumer
from .queues.entry import FramedEntry, QueueEntry
from .queues.local_type import LocalQueueClient
from .queues.queue_type import Pending, QueueClient, Settles
from .queues.remote import HomeLink, RemoteQueue
from .queues.remote_type import RemoteQueueClient
from .transaction import Transaction

if TYPE_CHECKING:
    from .broker import Broker
    from .vhost import VirtualHost

# An unacknowledged delivery: the queue it came from (a handle on it, for a remote queue), its
# entry, and its consumer (None for get).
Unacked = tuple[Settles, QueueEntry, Consumer | None]
# What an unknown tag in a row of basic.ack frames names as the failing method.
_BASIC_ACK = (m.BasicAck.CLASS_ID, m.BasicAck.METHOD_ID)


class Connection(Protocol):
    """The connection a channel belongs to, as far as the channel looks at it."""

    broker: Broker
    vhost: VirtualHost
    username: str
    owner_tag: str
    frame_max: int
    writable: bool
    paused_for_confirms: bool
    publishes_to_congested_queue: bool

    def write(self, data: bytes) -> None: ...

    def client_capability(self, name: str) -> bool: ...

    def check_exclusive_access(self, queue: ClassicQueue, method: tuple[int, int]) -> None: ...

    def throttle(self, queue: ClassicQueue | HomeLink) -> None: ...

    def confirms_sent(self) -> None: ...

    def wait_then(
        self, channel: Channel, pending: Awaitable[Any], then: Callable[[Any], None]
    ) -> None: ...

    def fail_channel(self, channel: Channel, error: AMQPError) -> None: ...


class Channel:
    """Handles the methods of one open channel; writes replies through its session."""

    def __init__(self, session: Connection, number: int) -> None:
        self.session = session
        self.number = number
        self.vhost = session.vhost
        self.consumers: dict[str, Consumer] = {}
        self.unacked: dict[int, Unacked] = {}
        self.last_queue_name: str | None = None
        self.consumer_prefetch = 0  # basic.qos global=false: the limit of each new consumer
        self.channel_prefetch = 0  # basic.qos global=true: shared by the channel's consumers
        self._next_delivery_tag = 1
        # Unacknowledged consumer deliveries: what a global prefetch limits (basic.get's are not).
        self._consumer_unacked = 0
        self.closed = False
        self.publisher = ChannelPublisher(self)
        self.transactional = False
        self.transaction = Transaction(self._committed)
        self.delivery_marks = DeliveryMarks()  # for the consumer timeout's sweeps
        self._permitted: set[tuple[str, str, str]] = set()
        self.reply_consumer: tuple[str, str] | None = None  # (consumer tag, reply suffix)
        self._handlers: dict[type[m.Method], Callable[[Any], None]] = {
            m.ChannelFlow: self._channel_flow,
            m.ExchangeDeclare: self._exchange_declare,
            m.ExchangeDelete: self._exchange_delete,
            m.ExchangeBind: self._exchange_bind,
            m.ExchangeUnbind: self._exchange_unbind,
            m.QueueDeclare: self._queue_declare,
            m.QueueBind: self._queue_bind,
            m.QueueUnbind: self._queue_unbind,
            m.QueuePurge: self._queue_purge,
            m.QueueDelete: self._queue_delete,
            m.BasicQos: self._basic_qos,
            m.BasicConsume: self._basic_consume,
            m.BasicCancel: self._basic_cancel,
            m.BasicGet: self._basic_get,
            m.BasicAck: self._basic_ack,
            m.BasicNack: self._basic_nack,
            m.BasicReject: self._basic_reject,
            m.BasicRecover: self._basic_recover,
            m.BasicRecoverAsync: self._basic_recover_async,
            m.ConfirmSelect: self.publisher.select_confirms,
            m.TxSelect: self._tx_select,
            m.TxCommit: self._tx_commit,
            m.TxRollback: self._tx_rollback,
        }

    # --- plumbing -----------------------------------------------------------------------------

    @property
    def metadata(self) -> MetadataStore:
        """Decides this channel's declarations, deletions and bindings (see declares)."""
        return self.session.broker.metadata

    def reply(self, method: m.Method) -> None:
        self.session.write(method_frame(self.number, method))

    def handle_method(self, method: m.Method) -> None:
        handler = self._handlers.get(type(method))
        if handler is None:
            raise AMQPError(
                ReplyCode.COMMAND_INVALID, f"unimplemented method {method.NAME}", method.ids
            )
        handler(method)

    # --- flow, exchanges ----------------------------------------------------------------------

    def _channel_flow(self, method: m.ChannelFlow) -> None:
        if not method.active:
            # RabbitMQ does not let clients stop deliveries with channel.flow.
            raise AMQPError(ReplyCode.NOT_IMPLEMENTED, "active=false", method.ids)
        self.reply(m.ChannelFlowOk(True))

    def check_access(self, kind: str, resource_kind: str, name: str, method: m.Method) -> None:
        """RabbitMQ's configure / write / read permissions, remembered per channel as RabbitMQ
        does."""
        if resource_kind == "exchange" and not name:
            name = "amq.default"  # the default exchange's name for permissions, as in RabbitMQ
        key = (kind, resource_kind, name)
        if key in self._permitted:
            return
        if not self.session.broker.permitted(self.session.username, self.vhost.name, kind, name):
            raise access_refused(
                f"access to {resource_kind} '{name}' in vhost '{self.vhost.name}' refused for user "
                f"'{self.session.username}'",
                method.ids,
            )
        if len(self._permitted) > 1000:
            self._permitted.clear()
        self._permitted.add(key)

    def _exchange_declare(self, method: m.ExchangeDeclare) -> None:
        if not method.passive:
            self.check_access("configure", "exchange", method.exchange, method)
            declares.exchange_declare(self, self.metadata, method)
            return
        # 404 when it does not exist; nothing else of a passive declaration is checked.
        self.vhost.check_exchange_declare(
            rules.strip_cr_lf(method.exchange),
            method.type,
            passive=True,
            durable=method.durable,
            auto_delete=method.auto_delete,
            internal=method.internal,
            arguments=method.arguments,
            method=method.ids,
        )
        if not method.no_wait:
            self.reply(m.ExchangeDeclareOk())

    def _exchange_delete(self, method: m.ExchangeDelete) -> None:
        self.check_access("configure", "exchange", method.exchange, method)
        declares.exchange_delete(self, self.metadata, method)

    def _exchange_bind(self, method: m.ExchangeBind) -> None:
        self.check_access("write", "exchange", method.destination, method)
        self.check_access("read", "exchange", method.source, method)
        declares.bind(
            self,
            self.metadata,
            method.source,
            method.destination,
            "exchange",
            method.routing_key,
            method.arguments,
            method,
            None if method.no_wait else m.ExchangeBindOk(),
        )

    def _exchange_unbind(self, method: m.ExchangeUnbind) -> None:
        self.check_access("write", "exchange", method.destination, method)
        self.check_access("read", "exchange", method.source, method)
        declares.unbind(
            self,
            self.metadata,
            method.source,
            method.destination,
            "exchange",
            method.routing_key,
            method.arguments,
            method,
            None if method.no_wait else m.ExchangeUnbindOk(),
        )

    # --- queues -------------------------------------------------------------------------------

    def _queue_name(self, name: str, method: m.Method) -> str:
        """The empty name means the last queue this channel declared with a server-made name."""
        if name:
            return name
        if self.last_queue_name is None:
            raise not_found("no previously declared queue", method.ids)
        return self.last_queue_name

    def _owned_queue(self, name: str, method: m.Method) -> ClassicQueue:
        queue = self.vhost.get_queue(self._queue_name(name, method), method.ids)
        self.session.check_exclusive_access(queue, method.ids)
        return queue

    def _queue_declare(self, method: m.QueueDeclare) -> None:
        if method.passive and method.queue == REPLY_QUEUE:
            if not method.no_wait:
                self.reply(m.QueueDeclareOk(REPLY_QUEUE, 0, 0))
            return
        if not method.passive:
            if method.queue:
                self.check_access("configure", "queue", method.queue, method)
            declares.queue_declare(self, self.metadata, method)
            return
        self.declare_ok(self._client(rules.strip_cr_lf(method.queue), method), method)

    def declare_ok(self, queue: QueueClient, method: m.QueueDeclare) -> None:
        """declare-ok with the queue's counts (its home node's, for a queue of another node)."""

        def answer(message_count: int, consumer_count: int) -> None:
            if not method.no_wait:
                self.reply(m.QueueDeclareOk(queue.name, message_count, consumer_count))

        self._wait(queue.status(answer))

    def _client(self, name: str, method: m.Method) -> QueueClient:
        """The queue `name` names, this node's or another's (404 or 405 as RabbitMQ's)."""
        remote = self.vhost.remote_queues.get(name)
        if remote is not None:
            return self.remote_client(remote, method)
        queue = self.vhost.get_queue(name, method.ids)
        self.session.check_exclusive_access(queue, method.ids)
        return LocalQueueClient(queue, method.ids)

    def remote_client(self, remote: RemoteQueue, method: m.Method) -> RemoteQueueClient:
        return RemoteQueueClient(remote, self.session.broker.links, self, method.ids)

    def wait_then(self, pending: Awaitable[Any], then: Callable[[Any], None]) -> None:
        """Hold this connection's later frames until `pending` is done, then call `then`."""
        self.session.wait_then(self, pending, then)

    def _wait(self, pending: Pending) -> None:
        """Hold this connection's later frames while a queue's home node answers."""
        if pending is not None:
            self.session.wait_then(self, pending, _done)

    def _bindable_queue(self, name: str, method: m.Method) -> str:
        """The name of a queue this connection may bind: a remote one too on a clustered node."""
        name = self._queue_name(name, method)
        remote = self.vhost.remote_queues.get(name)
        if remote is None:
            return self._owned_queue(name, method).name
        if remote.exclusive_owner is not None:
            raise rules.exclusive_locked(name, self.vhost.name, method.ids)
        return name

    def _queue_bind(self, method: m.QueueBind, *, current: bool = False) -> None:
        name = self._queue_name(method.queue, method)
        remote = self.vhost.remote_queues.get(name)
        if not current and (remote is not None or name not in self.vhost.queues):
            # "No queue" and "its home node is down" are answers from this node's view.
            again = functools.partial(self._queue_bind, method, current=True)
            timeout_text = "Could not add binding due to timeout"
            declares.when_current(self, self.metadata, again, timeout_text, method.ids)
            return
        name = self._bindable_queue(name, method)
        if remote is not None:
            client = self.remote_client(remote, method)
            if not client.link().up:
                # RabbitMQ refuses if its node is down: bind once an attempt reached it
                self.wait_then(client.reach(), lambda _: self._queue_bind(method, current=True))
                return
        self.check_access("write", "queue", name, method)
        self.check_access("read", "exchange", method.exchange, method)
        declares.bind(
            self,
            self.metadata,
            method.exchange,
            name,
            "queue",
            method.routing_key,
            method.arguments,
            method,
            None if method.no_wait else m.QueueBindOk(),
        )

    def _queue_unbind(self, method: m.QueueUnbind) -> None:
        name = self._queue_name(method.queue, method)
        if self.vhost.has_destination("queue", name):
            self._bindable_queue(name, method)  # 405 for another connection's exclusive queue
        self.check_access("write", "queue", name, method)
        self.check_access("read", "exchange", method.exchange, method)
        # A missing queue, exchange or binding is unbound already: RabbitMQ answers unbind-ok.
        declares.unbind(
            self,
            self.metadata,
            method.exchange,
            name,
            "queue",
            method.routing_key,
            method.arguments,
            method,
            m.QueueUnbindOk(),
        )

    def _queue_purge(self, method: m.QueuePurge) -> None:
        queue = self._client(self._queue_name(method.queue, method), method)
        self.check_access("read", "queue", queue.name, method)
        if queue.stream:
            raise stream_rules.not_supported("queue.purge", queue.name, self.vhost.name, method.ids)

        def purged(count: int) -> None:
            if not method.no_wait:
                self.reply(m.QueuePurgeOk(count))

        self._wait(queue.purge(purged))

    def _queue_delete(self, method: m.QueueDelete) -> None:
        name = self._queue_name(method.queue, method)
        self.check_access("configure", "queue", name, method)
        declares.queue_delete(self, self.metadata, name, method)

    def check_deletable(self, queue: ClassicQueue, method: m.QueueDelete) -> None:
        """This connection may delete `queue`, and its if-unused / if-empty conditions hold."""
        self.session.check_exclusive_access(queue, method.ids)
        if queue.stream:
            return  # RabbitMQ deletes a stream whatever if-unused and if-empty say
        where = f"queue '{queue.name}' in vhost '{self.vhost.name}'"
        if method.if_unused and queue.consumer_count:
            raise precondition_failed(f"{where} in use", method.ids)
        if method.if_empty and queue.message_count:
            raise precondition_failed(f"{where} not empty", method.ids)

    # --- consuming ----------------------------------------------------------------------------

    def _basic_qos(self, method: m.BasicQos) -> None:
        if method.prefetch_size:
            raise AMQPError(
                ReplyCode.NOT_IMPLEMENTED, f"prefetch_size!=0 ({method.prefetch_size})", method.ids
            )
        if method.global_:
            self.channel_prefetch = method.prefetch_count
            self._dispatch_all()
        else:
            self.consumer_prefetch = method.prefetch_count
        self.reply(m.BasicQosOk())

    def _basic_consume(self, method: m.BasicConsume) -> None:
        tag = method.consumer_tag or new_consumer_tag()
        if tag in self.consumers or (
            self.reply_consumer is not None and self.reply_consumer[0] == tag
        ):
            raise AMQPError(
                ReplyCode.NOT_ALLOWED, f"attempt to reuse consumer tag '{tag}'", method.ids
            )
        if method.queue == REPLY_QUEUE:
            self._consume_replies(tag, method)
            return
        queue = self._client(self._queue_name(method.queue, method), method)
        self.check_access("read", "queue", queue.name, method)
        if queue.stream:
            stream_rules.check_consume(
                queue.name,
                self.vhost.name,
                method.arguments,
                no_ack=method.no_ack,
                prefetch=self.consumer_prefetch,
                global_prefetch=self.channel_prefetch,
                method=method.ids,
            )
        else:
            stream_rules.check_classic_consume(
                queue.name, self.vhost.name, method.arguments, method.ids
            )
        queue.check_consume(method.exclusive)
        priority = self._consumer_priority(queue.name, method)
        # A home node holds no more unacknowledged deliveries than this channel allows.
        limits = [limit for limit in (self.consumer_prefetch, self.channel_prefetch) if limit]

        def started(consumer: Consumer) -> None:
            self.consumers[tag] = consumer
            if not method.no_wait:
                self.reply(m.BasicConsumeOk(tag))

        self._wait(
            queue.consume(
                self,
                tag,
                no_ack=method.no_ack,
                exclusive=method.exclusive,
                priority=priority,
                prefetch=self.consumer_prefetch,
                limit=min(limits, default=0),
                arguments=method.arguments,
                then=started,
            )
        )

    def _consumer_priority(self, queue: str, method: m.BasicConsume) -> int:
        priority = method.arguments.get("x-priority", 0)
        if isinstance(priority, bool) or not isinstance(priority, int):
            wire_type = argument_types(method.arguments).get("x-priority", "")
            type_name = FIELD_TYPE_NAMES.get(wire_type, "longstr")
            raise precondition_failed(
                f"invalid arg 'x-priority' for queue '{queue}' in vhost '{self.vhost.name}': "
                f'"expected integer, got {type_name}"',
                method.ids,
            )
        return priority

    def _consume_replies(self, tag: str, method: m.BasicConsume) -> None:
        if not method.no_ack:
            raise precondition_failed("reply consumer cannot acknowledge", method.ids)
        if self.reply_consumer is not None:
            raise precondition_failed("reply consumer already set", method.ids)
        self.reply_consumer = (tag, self.session.broker.direct_reply.register(self))
        if not method.no_wait:
            self.reply(m.BasicConsumeOk(tag))

    def _stop_replies(self) -> None:
        if self.reply_consumer is not None:
            self.session.broker.direct_reply.unregister(self.reply_consumer[1])
            self.reply_consumer = None

    def deliver_reply(self, message: Message) -> None:
        """A reply published to this channel's direct reply-to address (always no-ack)."""
        assert self.reply_consumer is not None
        tag = self._next_delivery_tag
        self._next_delivery_tag = tag + 1
        self.session.write(
            deliver_frames(
                self.number,
                shortstr(self.reply_consumer[0]),
                tag,
                False,
                message.exchange_and_key,
                message.header,
                message.body,
                self.session.frame_max,
            )
        )

    def _basic_cancel(self, method: m.BasicCancel) -> None:
        if self.reply_consumer is not None and self.reply_consumer[0] == method.consumer_tag:
            self._stop_replies()
        consumer = self.consumers.pop(method.consumer_tag, None)
        stopping = None
        if consumer is not None:
            queue: Settles = consumer.queue  # (a remote queue's handle, for a remote consumer)
            stopping = queue.remove_consumer(consumer)
        if method.no_wait:
            return
        if stopping is None:
            self.reply(m.BasicCancelOk(method.consumer_tag))
            return
        # A consumer of a queue on another node: cancel-ok once the home node has stopped it,
        # so that nothing is delivered to it after (RabbitMQ's channel waits for the queue).
        ok = m.BasicCancelOk(method.consumer_tag)
        self.session.wait_then(self, stopping, lambda _: self.reply(ok))

    # DeliverySink: what the queue asks of this channel.

    def can_deliver(self) -> bool:
        if self.channel_prefetch and self._consumer_unacked >= self.channel_prefetch:
            return False
        return self.session.writable and not self.closed

    def room(self, wanted: int) -> int:
        if not self.session.writable or self.closed:
            return 0
        if self.channel_prefetch:
            return max(0, min(wanted, self.channel_prefetch - self._consumer_unacked))
        return wanted

    def write_blocked(self) -> bool:
        return not self.session.writable

    def framing(self) -> tuple[int, int]:
        return self.number, self.session.frame_max

    def deliver(self, consumer: Consumer, queue: ClassicQueue, entry: QueueEntry) -> None:
        self.session.write(self._delivery(consumer, queue, entry))

    def deliver_all(
        self, consumer: Consumer, queue: ClassicQueue, entries: Sequence[QueueEntry]
    ) -> None:
        # One write for the batch: a remote queue's home node sends a consumer's deliveries
        # many at a time.
        self.session.write(b"".join([self._delivery(consumer, queue, entry) for entry in entries]))

    def _delivery(self, consumer: Consumer, queue: ClassicQueue, entry: QueueEntry) -> bytes:
        """The frames of `entry` delivered under the channel's next delivery tag."""
        tag = self._next_delivery_tag
        self._next_delivery_tag = tag + 1
        if not consumer.no_ack:
            self.unacked[tag] = (queue, entry, consumer)
            self._consumer_unacked += 1
        if type(entry) is FramedEntry:  # from a remote queue's home node, framed for us
            return deliver_framed(
                self.number,
                consumer.tag_bytes,
                tag,
                entry.redelivered,
                entry.exchange_and_key,
                entry.framed,
            )
        message = entry.message
        return deliver_frames(
            self.number,
            consumer.tag_bytes,
            tag,
            entry.redelivered,
            message.exchange_and_key,
            message.header,
            message.body,
            self.session.frame_max,
        )

    def oldest_unacked_age(self, now: float) -> float:
        """How long the oldest unacknowledged delivery has surely waited (a timeout sweep)."""
        oldest = next(iter(self.unacked), None)  # insertion order is delivery-tag order
        return self.delivery_marks.oldest_age(self._next_delivery_tag, oldest, now)

    def fail(self, error: AMQPError) -> None:
        """Close this channel with `error`, as if a frame had caused it."""
        self.session.fail_channel(self, error)

    def consumer_cancelled_by_node(self, consumer: Consumer) -> None:
        """The queue went away: tell a client that understands basic.cancel from the node."""
        if self.consumers.pop(consumer.tag, None) is None:
            return
        if self.session.client_capability("consumer_cancel_notify"):
            self.reply(m.BasicCancel(consumer.tag, True))

    def _basic_get(self, method: m.BasicGet) -> None:
        queue = self._client(self._queue_name(method.queue, method), method)
        self.check_access("read", "queue", queue.name, method)
        if queue.stream:
            raise stream_rules.not_supported("basic.get", queue.name, self.vhost.name, method.ids)

        def got(settles: Settles, entry: QueueEntry | None, message_count: int) -> None:
            if entry is None:
                self.reply(m.BasicGetEmpty())
            else:
                self._write_got(settles, entry, message_count, method.no_ack)

        self._wait(queue.get(method.no_ack, got))

    def _write_got(
        self,
        queue: Settles,
        entry: QueueEntry,
        message_count: int,
        no_ack: bool,
    ) -> None:
        tag = self._next_delivery_tag
        self._next_delivery_tag = tag + 1
        if not no_ack:
            self.unacked[tag] = (queue, entry, None)
        message = entry.message
        self.session.write(
            get_ok_frames(
                self.number,
                tag,
                entry.redelivered,
                message.exchange_and_key,
                message_count,
                message.header,
                message.body,
                self.session.frame_max,
            )
        )

    # --- acknowledgements ---------------------------------------------------------------------

    def _take_unacked(self, tag: int, multiple: bool, method: m.Method) -> list[Unacked]:
        unacked = self.unacked
        if multiple:
            if tag == 0:
                taken = list(unacked.values())
                unacked.clear()
                return taken
            if tag not in unacked:
                raise precondition_failed(f"unknown delivery tag {tag}", method.ids)
            keys = []
            for key in unacked:  # insertion order is delivery-tag order
                if key > tag:
                    break
                keys.append(key)
            return [unacked.pop(key) for key in keys]
        record = unacked.pop(tag, None)
        if record is None:
            raise precondition_failed(f"unknown delivery tag {tag}", method.ids)
        return [record]

    def ack_each(self, tags: list[int]) -> None:
        """basic.ack for each of `tags` in turn (none `multiple`), as so many basic.ack frames
        would be, with one dispatch of the queues they free at the end."""
        if self.transactional:
            for tag in tags:
                self._basic_ack(m.BasicAck(tag, False))
            return
        unacked = self.unacked
        records: list[Unacked] = []
        for tag in tags:
            record = unacked.pop(tag, None)
            if record is None:
                self._settle(records)  # the acks before it count, as they would one at a time
                raise precondition_failed(f"unknown delivery tag {tag}", _BASIC_ACK)
            records.append(record)
        self._settle(records)

    def _basic_ack(self, method: m.BasicAck) -> None:
        if self.transactional:
            self._check_tag(method.delivery_tag, method.multiple, method)
            self.transaction.hold("ack", method.delivery_tag, method.multiple, False)
            return
        self._settle(self._take_unacked(method.delivery_tag, method.multiple, method))

    def _basic_nack(self, method: m.BasicNack) -> None:
        if self.transactional:
            self._check_tag(method.delivery_tag, method.multiple, method)
            self.transaction.hold("nack", method.delivery_tag, method.multiple, method.requeue)
            return
        records = self._take_unacked(method.delivery_tag, method.multiple, method)
        self._refuse_stream_rejects(records, method)
        self._reject(records, method.requeue)

    def _basic_reject(self, method: m.BasicReject) -> None:
        if self.transactional:
            self._check_tag(method.delivery_tag, False, method)
            self.transaction.hold("nack", method.delivery_tag, False, method.requeue)
            return
        records = self._take_unacked(method.delivery_tag, False, method)
        self._refuse_stream_rejects(records, method)
        self._reject(records, method.requeue)

    def _refuse_stream_rejects(self, records: list[Unacked], method: m.Method) -> None:
        for queue, _, _ in records:
            if queue.stream:
                raise stream_rules.not_supported(
                    "basic.nack and basic.reject", queue.name, queue.vhost, method.ids
                )

    def _check_tag(self, tag: int, multiple: bool, method: m.Method) -> None:
        if (tag or not multiple) and tag not in self.unacked:
            raise precondition_failed(f"unknown delivery tag {tag}", method.ids)

    def _settle(self, records: list[Unacked]) -> None:
        # Each queue settles a run of its entries at once (a read's acks are mostly one
        # queue's): for a remote queue, the run goes on the link as one list.
        touched: list[Settles] = []
        run: list[QueueEntry] = []
        for queue, entry, consumer in records:
            if consumer is not None:
                consumer.in_flight -= 1
                self._consumer_unacked -= 1
            if touched and touched[-1] is queue:
                run.append(entry)
                continue
            if run:
                touched[-1].settle_all(run)
            touched.append(queue)
            run = [entry]
        if run:
            touched[-1].settle_all(run)
        self._after_settle(touched)

    def _reject(self, records: list[Unacked], requeue: bool) -> None:
        if requeue:
            self._requeue(records)
            return
        touched: list[Settles] = []
        for queue, entry, consumer in records:
            queue.reject(entry)
            if consumer is not None:
                consumer.in_flight -= 1
                self._consumer_unacked -= 1
            if not touched or touched[-1] is not queue:
                touched.append(queue)
        self._after_settle(touched)

    def _requeue(self, records: list[Unacked]) -> None:
        by_queue: dict[Settles, list[QueueEntry]] = {}
        for queue, entry, consumer in records:
            if consumer is not None:
                consumer.in_flight -= 1
                self._consumer_unacked -= 1
            by_queue.setdefault(queue, []).append(entry)
        for queue, entries in by_queue.items():
            queue.requeue(entries)
        self._after_settle(list(by_queue))

    def _after_settle(self, queues: list[Settles]) -> None:
        if self.channel_prefetch:
            self._dispatch_all()
            return
        for queue in queues:
            if not queue.deleted:
                queue.dispatch()

    def _dispatch_all(self) -> None:
        for queue in {c.queue for c in self.consumers.values()}:
            if not queue.deleted:
                queue.dispatch()

    def _basic_recover(self, method: m.BasicRecover) -> None:
        self._recover(method)
        self.reply(m.BasicRecoverOk())

    def _basic_recover_async(self, method: m.BasicRecoverAsync) -> None:
        self._recover(method)

    def _recover(self, method: m.BasicRecover | m.BasicRecoverAsync) -> None:
        if not method.requeue:
            raise AMQPError(ReplyCode.NOT_IMPLEMENTED, "requeue=false", method.ids)
        records = list(self.unacked.values())
        if any(queue.stream for queue, _, _ in records):
            raise stream_rules.recover_failed(method.ids)
        self.unacked.clear()
        self._requeue(records)

    # --- transactions -------------------------------------------------------------------------

    def _tx_select(self, method: m.TxSelect) -> None:
        if self.publisher.confirming:
            raise precondition_failed("cannot switch from confirm to tx mode", method.ids)
        self.transactional = self.publisher.wants_confirms = True
        self.reply(m.TxSelectOk())

    def _tx_commit(self, method: m.TxCommit) -> None:
        if not self.transactional:
            raise precondition_failed("channel is not transactional", method.ids)
        publishes, settlements = self.transaction.begin_commit()
        for message, queues, mandatory in publishes:
            self.publisher.deliver_published(message, queues, mandatory)
        for kind, tag, multiple, requeue in settlements:
            records = self._take_unacked(tag, multiple, method)
            if kind == "ack":
                self._settle(records)
            else:
                self._reject(records, requeue)
        # commit-ok promises the persistent messages are on disk, here and on their home nodes.
        self.transaction.end_commit(self.publisher.take_sync())

    def _committed(self, failure: str | None) -> None:
        if self.closed:
            return
        if failure is None:
            self.reply(m.TxCommitOk())
        else:
            self.session.fail_channel(self, AMQPError(ReplyCode.INTERNAL_ERROR, failure, (90, 20)))

    def _tx_rollback(self, method: m.TxRollback) -> None:
        if not self.transactional:
            raise precondition_failed("channel is not transactional", method.ids)
        self.transaction.rollback()
        self.reply(m.TxRollbackOk())

    # --- closing ------------------------------------------------------------------------------

    def teardown(self) -> None:
        """The channel is gone: cancel its consumers and requeue what it had not acknowledged."""
        if self.closed:
            return
        self.closed = True
        self._stop_replies()
        # Requeue first, while this channel's consumers still hold their places: a single active
        # consumer's successor must get the requeued (older) messages before the ready ones.
        records = list(self.unacked.values())
        self.unacked.clear()
        if records:
            self._requeue(records)
        consumers, self.consumers = self.consumers, {}
        for consumer in consumers.values():
            consumer.queue.remove_consumer(consumer)
        if self.session.paused_for_confirms:
            self.session.confirms_sent()  # what this channel left unconfirmed counts no more


def _done(_: object) -> None:
    """What follows a wait whose work is all done by the awaited coroutine."""
