"""What one channel does with what its client publishes: the checks, routing, returns, publisher
confirms and flow control (the `queue_type.Publisher` its queues and their home nodes answer)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from .amqp import methods as m
from .amqp.errors import AMQPError, ReplyCode, precondition_failed
from .amqp.frames import content_frames
from .confirms import Confirms
from .direct_reply import REPLY_PREFIX, REPLY_QUEUE, node_of, reply_address, with_reply_address
from .message import Message, check_properties, sender_selected
from .queues import queue_type

if TYPE_CHECKING:
    from .broker import Broker
    from .queues.classic import ClassicQueue
    from .queues.queue_type import QueueRef
    from .queues.remote import HomeLink
    from .transaction import Transaction, WhenDurable
    from .vhost import VirtualHost


class PublishingSession(Protocol):
    """The connection of a publisher's channel, as far as the publisher looks at it."""

    broker: Broker
    username: str
    frame_max: int
    paused_for_confirms: bool
    publishes_to_congested_queue: bool

    def write(self, data: bytes) -> None: ...

    def throttle(self, queue: ClassicQueue | HomeLink) -> None: ...

    def confirms_sent(self) -> None: ...


class PublishingChannel(Protocol):
    """The channel a publisher belongs to, as far as the publisher looks at it."""

    @property
    def session(self) -> PublishingSession: ...

    vhost: VirtualHost
    number: int
    closed: bool
    transactional: bool
    transaction: Transaction
    reply_consumer: tuple[str, str] | None

    def check_access(self, kind: str, resource_kind: str, name: str, method: m.Method) -> None: ...

    def reply(self, method: m.Method) -> None: ...

    def wait_then(self, pending: Awaitable[Any], then: Callable[[Any], None]) -> None: ...


class ChannelPublisher:
    """The publishing side of one channel (see the module docstring)."""

    def __init__(self, channel: PublishingChannel) -> None:
        self._channel = channel
        self.session = channel.session
        self.confirming = False  # confirm mode (confirm.select)
        self.wants_confirms = False  # confirm mode or a transaction: queues say how they confirm
        self.confirms = Confirms()  # in confirm mode
        # Publishes of this read batch wait for an fsync before they may be confirmed.
        self._batch_needs_sync = False
        self._confirm_scheduled = False
        self._loop: asyncio.AbstractEventLoop | None = None  # (see confirmed)

    def handle_publish(self, method: m.BasicPublish, header: bytes, body: bytes) -> None:
        if method.immediate:
            raise AMQPError(ReplyCode.NOT_IMPLEMENTED, "immediate=true", method.ids)
        channel = self._channel
        message = Message(method.exchange, method.routing_key, header, body)
        has_properties = message.has_flags  # (most traffic has none: nothing to check)
        if has_properties:
            problem = check_properties(message)
            if problem is not None:
                raise AMQPError(
                    ReplyCode.FRAME_ERROR, f"cannot decode content header: {problem}", method.ids
                )
            user_id = message.properties.user_id
            if user_id is not None and user_id != self.session.username:
                raise precondition_failed(
                    f"user_id property set to '{user_id}' but authenticated user was "
                    f"'{self.session.username}'",
                    method.ids,
                )
            expiration = message.properties.expiration
            if expiration is not None:
                _check_expiration(expiration, method.ids)
            if message.properties.reply_to == REPLY_QUEUE:
                consumer = channel.reply_consumer
                address = consumer[1] if consumer is not None else None
                message = with_reply_address(message, address, method.ids)
        channel.check_access("write", "exchange", method.exchange, method)
        extra_keys: tuple[str, ...] = ()
        if has_properties and message.properties.headers:
            extra_keys, message = sender_selected(message)
        if not method.exchange and method.routing_key.startswith(REPLY_PREFIX):
            self._publish_reply(message, method.mandatory)
            return
        headers = message.properties.headers if has_properties else None
        queues = channel.vhost.route(
            method.exchange, method.routing_key, headers, method.ids, extra_keys
        )
        seq = self.confirms.next_seq() if self.confirming else 0
        if channel.transactional:
            channel.transaction.publishes.append((message, queues, method.mandatory))
            return
        self.deliver_published(message, queues, method.mandatory, seq)

    def _publish_reply(self, message: Message, mandatory: bool) -> None:
        seq = self.confirms.next_seq() if self.confirming else 0
        registry = self.session.broker.direct_reply
        address = reply_address(message.routing_key)
        requester = registry.requester(address)
        if requester is not None:
            requester.deliver_reply(message)
            return
        node = node_of(address)
        links = self._channel.vhost.links
        if node is None or node == registry.node or links is None:
            if mandatory:
                self._return(message, ReplyCode.NO_ROUTE, "NO_ROUTE")
            return
        link = links.link(node)
        if not mandatory:
            link.direct_reply(address, message)  # dropped there if the requester has gone
            return
        # As RabbitMQ, which asks the requester's node whether its channel is still there:
        # the reply is returned if not, and this channel's later frames wait for the answer.
        if seq:
            self.confirms.expect(seq)

        def answered(reached: bool) -> None:
            if not reached:
                self._return(message, ReplyCode.NO_ROUTE, "NO_ROUTE")
            if seq:
                self.confirms.confirm(seq)

        self._channel.wait_then(link.direct_reply_mandatory(address, message), answered)

    def deliver_published(
        self, message: Message, queues: list[QueueRef], mandatory: bool, seq: int = 0
    ) -> None:
        """`seq`: its confirm's sequence number in confirm mode, else 0."""
        vhost = self._channel.vhost
        taken = bool(queues) and queue_type.deliver(vhost, queues, message, self, seq)
        if mandatory and not taken:
            self._return(message, ReplyCode.NO_ROUTE, "NO_ROUTE")

    def _return(self, message: Message, code: int, text: str) -> None:
        payload = m.BasicReturn(code, text, message.exchange, message.routing_key).encode()
        self.session.write(
            content_frames(
                self._channel.number, payload, message.header, message.body, self.session.frame_max
            )
        )

    # --- what the queues tell of this channel's publishes (queue_type.Publisher) --------------

    def stored(self, seq: int) -> None:
        self._batch_needs_sync = True

    def refused(self, seq: int) -> None:
        if self.confirming:
            self.confirms.reject(seq)

    def expect(self, seq: int) -> None:
        if seq:
            self.confirms.expect(seq)
        else:
            self._channel.transaction.expect_remote()

    def confirmed(self, seqs: list[int], taken: bool) -> None:
        """A home node took (or could not take) publishes of this channel: a `seq` 0 is one of
        a committing transaction's."""
        if self._channel.closed:
            return
        if not seqs[0]:  # (a channel is in one mode: all of them are the transaction's)
            for _ in seqs:
                self._channel.transaction.remote_taken(taken)
            return
        confirms = self.confirms
        for seq in seqs:
            if not taken:
                confirms.reject(seq)
            confirms.confirm(seq)
        if not self._confirm_scheduled:
            # One basic.ack for all the home node confirmed in this turn of the loop.
            self._confirm_scheduled = True
            loop = self._loop
            if loop is None:
                # Looked up once: asyncio.get_running_loop() makes a getpid system call.
                loop = self._loop = asyncio.get_running_loop()
            loop.call_soon(self._confirm_remote)

    def congested(self, queue: ClassicQueue) -> None:
        self.session.publishes_to_congested_queue = True
        if queue.flow_blocked:
            self.session.throttle(queue)

    def throttle(self, link: HomeLink) -> None:
        self.session.throttle(link)

    def home_congested(self) -> None:
        self.session.publishes_to_congested_queue = True

    # --- confirms -----------------------------------------------------------------------------

    def select_confirms(self, method: m.ConfirmSelect) -> None:
        if self._channel.transactional:
            raise precondition_failed("cannot switch from tx to confirm mode", method.ids)
        self.confirming = self.wants_confirms = True
        if not method.no_wait:
            self._channel.reply(m.ConfirmSelectOk())

    def _confirm_remote(self) -> None:
        self._confirm_scheduled = False
        if not self._channel.closed:
            self._confirm_ready()

    def flush_confirms(self) -> None:
        """At the end of a read batch: confirm what may be confirmed, in one basic.ack.

        Publishes that went to disk are confirmed once the group commit has fsynced them, and
        those sent to other nodes once their home nodes took them; later ones wait behind them,
        so that every ack can be a `multiple` one."""
        if self._batch_needs_sync:
            self._batch_needs_sync = False
            stores = self.session.broker.stores
            if stores is not None:
                upto = self.confirms.hold()
                stores.committer.call_when_durable(lambda error: self._synced(upto, error))
        self._confirm_ready()

    def take_sync(self) -> WhenDurable | None:
        """How to wait for the disk when this batch's publishes went there, else None (a
        transaction's commit waits instead of the confirms)."""
        stores = self.session.broker.stores
        if not self._batch_needs_sync or stores is None:
            return None
        self._batch_needs_sync = False
        return stores.committer.call_when_durable

    def _synced(self, upto: int, error: BaseException | None) -> None:
        # The store could not make these durable on error: the publisher must resend them.
        self.confirms.durable(upto, error is None)
        if not self._channel.closed:
            self._confirm_ready()

    def _confirm_ready(self) -> None:
        reply = self._channel.reply
        for ack, seq, multiple in self.confirms.settle():
            reply(m.BasicAck(seq, multiple) if ack else m.BasicNack(seq, False, False))
        if self.session.paused_for_confirms:
            self.session.confirms_sent()

    def awaiting_confirms(self) -> bool:
        """Whether publishes read on this channel wait for their basic.ack or basic.nack."""
        return self.confirming and self.confirms.awaiting()


_MAX_EXPIRATION_MS = 315_360_000_000  # ten years, RabbitMQ's bound on TTLs


def _check_expiration(expiration: str, method: tuple[int, int]) -> None:
    """RabbitMQ refuses a publish whose expiration property is not a non-negative integer."""
    match = _LEADING_INTEGER.match(expiration)
    if match is None:
        reason = "no_integer"
    elif match.group(2):
        reason = f'{{leftover_string,"{match.group(2)}"}}'
    else:
        value = int(match.group(1))
        if value < 0:
            reason = f"{{value_negative,{value}}}"
        elif value > _MAX_EXPIRATION_MS:
            reason = f"{{value_too_large,{value}}}"
        else:
            return
    raise precondition_failed(f"invalid expiration '{expiration}': {reason}", method)


_LEADING_INTEGER = re.compile(r"([+-]?[0-9]+)(.*)", re.DOTALL)
