"""One client connection's semantics: handshake, login, channels, and the one error mapper."""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import platform
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol, cast

from . import __version__
from .amqp import methods as m
from .amqp.connection import (
    AcksReceived,
    BadProtocolHeader,
    ChannelFailed,
    ConnectionFailed,
    ContentReceived,
    Event,
    MethodReceived,
    ProtocolHeaderReceived,
    ServerConnection,
)
from .amqp.constants import (
    DEFAULT_CHANNEL_MAX,
    DEFAULT_FRAME_MAX,
    DEFAULT_HEARTBEAT,
    PROTOCOL_HEADER,
)
from .amqp.errors import AMQPError, ReplyCode, resource_locked
from .amqp.frames import method_frame
from .auth import MECHANISMS, TLS_MECHANISMS, SaslError, external_login, is_loopback, parse_response
from .channel import Channel
from .limits import (
    limit_of,
    user_channels_refused,
    user_connections_refused,
    vhost_connections_refused,
)
from .metadata import MetadataUnavailable
from .metadata_commands import delete_queue as delete_queue_command
from .names import RUN_ID

if TYPE_CHECKING:
    from .broker import Broker
    from .queues.classic import ClassicQueue
    from .queues.remote import HomeLink
    from .tls_peer import TLSPeer
    from .vhost import VirtualHost

log = logging.getLogger(__name__)

# Methods whose 404 may only mean that a name another node just declared has not reached this
# node's model yet. RabbitMQ's metadata is synchronous (a declare-ok on one node means every node
# knows the name), so before answering 404 a clustered node catches up with the cluster once and
# tries again: one read barrier, paid only on a miss.
_CATCH_UP_ON_MISS = frozenset(
    {
        m.QueueDeclare,
        m.ExchangeDeclare,
        m.BasicConsume,
        m.BasicGet,
        m.QueueBind,
        m.QueueUnbind,
        m.ExchangeBind,
        m.ExchangeUnbind,
        m.QueuePurge,
    }
)

_session_numbers = itertools.count(1)

CAPABILITIES = (
    "publisher_confirms",
    "exchange_exchange_bindings",
    "basic.nack",
    "consumer_cancel_notify",
    "connection.blocked",
    "consumer_priorities",
    "authentication_failure_close",
    "per_consumer_qos",
    "direct_reply_to",
)


class Transport(Protocol):
    """What a session needs from the IO layer."""

    def write(self, data: bytes) -> None: ...

    def close(self) -> None: ...

    def close_after_grace(self) -> None: ...

    def close_when_client_does(self) -> None: ...

    def close_silently(self) -> None: ...

    def heartbeat_negotiated(self, seconds: int) -> None: ...

    def set_reading(self, reading: bool) -> None: ...


class Session:
    """Feeds client bytes through the sans-IO connection and acts on its events."""

    def __init__(
        self,
        broker: Broker,
        transport: Transport,
        peer: tuple[str, int],
        tls: TLSPeer | None = None,
    ) -> None:
        self.broker = broker
        self.transport = transport
        self.peer = peer
        self.tls = tls  # set on an AMQPS connection: its protocol, cipher, client certificate
        self.mechanisms = TLS_MECHANISMS if tls is not None else MECHANISMS
        self.auth_mechanism = "PLAIN"
        self.conn = ServerConnection(max_content_size=broker.config.max_message_size)
        self.channels: dict[int, Channel] = {}
        self.vhost: VirtualHost = None  # type: ignore[assignment]  # set by connection.open
        self.username = ""
        self.client_properties: dict[str, Any] = {}
        self.writable = True
        self.frame_max = DEFAULT_FRAME_MAX
        self.phase = "starting"  # starting, tuning, opening, running: RabbitMQ's handshake states
        self.blocked = False  # told connection.blocked, and not read, until the alarm clears
        self.alarm: str | None = None
        self._held: list[Event] = []
        self.exclusive_queues: set[str] = set()
        # What holds this publisher back: congested queues, or links to other nodes.
        self._throttled_by: set[ClassicQueue | HomeLink] = set()
        # Set while this connection publishes to a queue whose consumers fall behind: its
        # turns on the event loop get smaller, so on a busy node consumers catch up.
        self.publishes_to_congested_queue = False
        # Set while a channel method waits for the cluster to decide a definition change: the
        # connection's later frames wait too, so that each channel sees its methods in order.
        self._waiting = False
        # Set while this publisher has too many publishes unconfirmed (the config's cap).
        self.paused_for_confirms = False
        # How the cluster names this connection as the owner of its exclusive queues.
        self.owner_tag = f"{broker.config.node_name}/{RUN_ID}/{next(_session_numbers)}"
        self.closed = False
        # Set when the node closes the connection for the client's fault (any hard error but
        # 320 CONNECTION_FORCED): admission counts such connections against their address.
        self.failed = False
        self._released = False
        # Set once our connection.close is out: frames the parser read in the same batch as
        # the one that failed are not handled (only the client's close or close-ok matter).
        self._closing = False

    # --- IO entry points ----------------------------------------------------------------------

    def data_received(self, data: bytes, max_frames: int = 0) -> None:
        self.publishes_to_congested_queue = False
        self._handle_events(self.conn.receive_data(data, max_frames))

    def _handle_events(self, events: list[Event]) -> None:
        channels = self.channels
        published = False
        for index, event in enumerate(events):
            if self.closed:
                break
            if self._waiting:
                self._held.extend(events[index:])
                break
            if self._closing and not _answers_our_close(event):
                continue
            kind = type(event)
            if kind is ContentReceived:
                if self.alarm is not None:
                    # As RabbitMQ: a connection that publishes during a resource alarm is told it
                    # is blocked and read no further; its publishes wait for the alarm to clear.
                    self._held.extend(events[index:])
                    self._block()
                    break
                channel = channels.get(event.channel)  # type: ignore[union-attr]
                if channel is not None:
                    published = True
                    self._run(
                        channel, channel.publisher.handle_publish, cast(ContentReceived, event)
                    )
            elif kind is AcksReceived:
                self._acks(event)  # type: ignore[arg-type]
            elif kind is MethodReceived:
                self._method(event)  # type: ignore[arg-type]
            elif kind is ChannelFailed:
                self._channel_error(event.channel, event.error)  # type: ignore[union-attr]
            elif kind is ConnectionFailed:
                self._connection_error(event.error, event.lost_sync)  # type: ignore[union-attr]
            elif kind is ProtocolHeaderReceived:
                self._send_start()
            elif kind is BadProtocolHeader:
                self.transport.write(PROTOCOL_HEADER)
                self.transport.close()
        confirming = False
        for channel in channels.values():
            publisher = channel.publisher
            if publisher.confirming:
                confirming = True
                publisher.flush_confirms()
        if not published or not confirming:
            return  # (the sum below walks every channel: only publishes to confirm count)
        cap = self.broker.config.max_unconfirmed_per_connection
        if cap and not self.paused_for_confirms and self.unconfirmed() > cap:
            # As RabbitMQ's credit flow: a publisher far ahead of its confirms is read no
            # further, so that what it sent meanwhile does not pile up in this node's memory.
            self.paused_for_confirms = True
            self.transport.set_reading(False)

    def unconfirmed(self) -> int:
        """Publishes read on this connection in confirm mode and not yet confirmed."""
        return sum(
            ch.publisher.confirms.published - ch.publisher.confirms.settled
            for ch in self.channels.values()
            if ch.publisher.confirming
        )

    def confirms_sent(self) -> None:
        """A channel sent confirms: read again once half of the cap is left unconfirmed."""
        cap = self.broker.config.max_unconfirmed_per_connection
        if self.paused_for_confirms and self.unconfirmed() <= cap // 2:
            self.paused_for_confirms = False
            self._resume_reading()

    def connection_lost(self) -> None:
        """The socket is gone: release channels and exclusive queues."""
        self.release()

    def release(self) -> None:
        """Release channels and exclusive queues: at connection.close, or when the socket goes."""
        if self._released:
            return
        self._released = True
        self.closed = True
        for queue in self._throttled_by:
            queue.throttled.discard(self)
        self._throttled_by.clear()
        self._teardown_channels()
        if self.vhost is not None:
            for name in list(self.exclusive_queues):
                self.vhost.delete_queue(name)
                # Gone here at once; the cluster forgets it as soon as it can decide.
                self.broker.metadata.submit_eventually(
                    delete_queue_command(self.vhost.name, name, self.owner_tag)
                )
        self.exclusive_queues.clear()
        open_sessions(self.broker).discard(self)

    def write(self, data: bytes) -> None:
        self.transport.write(data)

    def set_writable(self, writable: bool) -> None:
        """Flow control from the socket: stop deliveries while its buffer is full."""
        self.writable = writable
        if writable:
            for channel in list(self.channels.values()):
                channel._dispatch_all()

    # --- what channels ask of the connection ----------------------------------------------

    def client_capability(self, name: str) -> bool:
        capabilities = self.client_properties.get("capabilities")
        return isinstance(capabilities, dict) and capabilities.get(name) is True

    def check_exclusive_access(self, queue: ClassicQueue, method: tuple[int, int]) -> None:
        if queue.exclusive_owner is not None and queue.exclusive_owner is not self:
            raise resource_locked(
                f"cannot obtain exclusive access to locked queue '{queue.name}' in vhost "
                f"'{queue.vhost}'. It could be originally declared on another connection or the "
                "exclusive property value does not match that of the original declaration.",
                method,
            )

    # --- flow control and alarms --------------------------------------------------------------

    def throttle(self, queue: ClassicQueue | HomeLink) -> None:
        """Stop reading from this publisher until the queue's consumers catch up."""
        if queue in self._throttled_by:
            return
        self._throttled_by.add(queue)
        queue.throttled.add(self)
        self.transport.set_reading(False)

    def release_throttle(self, queue: ClassicQueue | HomeLink) -> None:
        self._throttled_by.discard(queue)
        self._resume_reading()

    def _resume_reading(self) -> None:
        """Read again unless something else still holds this connection back."""
        if not (
            self._throttled_by
            or self.blocked
            or self._waiting
            or self.paused_for_confirms
            or self.closed
        ):
            self.transport.set_reading(True)

    def set_alarm(self, reason: str | None) -> None:
        """The node's resource alarms changed: `reason` while any is raised, None once all clear.

        Nothing is said to the client until it publishes (RabbitMQ's "blocking" state); one that
        was blocked hears connection.unblocked and its held publishes go through."""
        self.alarm = reason
        if reason is not None or self.closed:
            return
        if self.blocked:
            self.blocked = False
            if self.client_capability("connection.blocked"):
                self.write(method_frame(0, m.ConnectionUnblocked()))
        self._handle_held()
        if self.alarm is None:
            self._resume_reading()

    def _handle_held(self) -> None:
        held, self._held = self._held, []
        if held:
            self._handle_events(held)

    # --- waiting for the cluster --------------------------------------------------------------

    def wait_then(
        self, channel: Channel, pending: Awaitable[Any], then: Callable[[Any], None]
    ) -> None:
        """Hold this connection's later frames until `pending` is done, then call `then` with
        its result on `channel` (if still open); an AMQPError from either closes the channel."""
        self._waiting = True
        self.transport.set_reading(False)
        future = asyncio.ensure_future(pending)
        future.add_done_callback(lambda done: self._waited(channel, done, then))

    def _waited(
        self, channel: Channel, done: asyncio.Future[Any], then: Callable[[Any], None]
    ) -> None:
        self._waiting = False
        if self.closed:
            return
        if self.channels.get(channel.number) is channel:
            try:
                then(done.result())
            except AMQPError as error:
                self._handle_error(channel.number, error)
            except Exception:
                log.exception("channel %d: waiting for the cluster failed", channel.number)
                self._handle_error(
                    channel.number,
                    AMQPError(
                        ReplyCode.INTERNAL_ERROR,
                        "the change could not be made; see the node's log",
                        hard=True,
                    ),
                )
        self._handle_held()
        for open_channel in self.channels.values():
            if open_channel.publisher.confirming:
                open_channel.publisher.flush_confirms()
        self._resume_reading()

    def _block(self) -> None:
        if not self.blocked:
            self.blocked = True
            if self.client_capability("connection.blocked"):
                self.write(method_frame(0, m.ConnectionBlocked(self.alarm or "")))
        self.transport.set_reading(False)

    # --- events -------------------------------------------------------------------------------

    def _run(self, channel: Channel, handler: Callable[..., None], event: ContentReceived) -> None:
        try:
            handler(event.method, event.header, event.body)
        except AMQPError as error:
            self._handle_error(channel.number, error)

    def _acks(self, event: AcksReceived) -> None:
        channel = self.channels.get(event.channel)
        if channel is None:
            return
        try:
            channel.ack_each(event.delivery_tags)
        except AMQPError as error:
            self._handle_error(event.channel, error)

    def _method(self, event: MethodReceived) -> None:
        number, method = event.channel, event.method
        if number == 0:
            try:
                self._connection_method(method)
            except AMQPError as error:
                self._connection_error(error, False)
            return
        kind = type(method)
        if kind is m.ChannelOpen:
            try:
                self._check_channel_limit(method.ids)
            except AMQPError as error:
                self._connection_error(error, False)
                return
            self.channels[number] = Channel(self, number)
            self.write(method_frame(number, m.ChannelOpenOk()))
            return
        if kind is m.ChannelClose:
            channel = self.channels.pop(number, None)
            if channel is not None:
                channel.teardown()
            self.write(method_frame(number, m.ChannelCloseOk()))
            return
        channel = self.channels.get(number)
        if channel is None:
            return
        try:
            channel.handle_method(method)
        except AMQPError as error:
            if (
                error.code == ReplyCode.NOT_FOUND
                and kind in _CATCH_UP_ON_MISS
                and self.broker.metadata.may_lag
            ):
                self.wait_then(
                    channel, self._caught_up(error), lambda _: channel.handle_method(method)
                )
                return
            self._handle_error(number, error)

    async def _caught_up(self, miss: AMQPError) -> None:
        """This node's model has every change decided before the miss (or the miss stands)."""
        try:
            await self.broker.metadata.catch_up()
        except MetadataUnavailable:
            raise miss from None

    def _handle_error(self, number: int, error: AMQPError) -> None:
        """The one mapper: soft errors close the channel, hard errors the connection."""
        if error.hard or number == 0:
            self._connection_error(error, False)
            return
        log.debug("channel %d error: %s", number, error)
        channel = self.channels.pop(number, None)
        if channel is not None:
            channel.teardown()
        self.write(self.conn.close_channel(number, error))

    def fail_channel(self, channel: Channel, error: AMQPError) -> None:
        """An error found outside the handling of a frame (a failed disk write, say)."""
        if self.channels.get(channel.number) is channel:
            self._handle_error(channel.number, error)

    def _channel_error(self, number: int, error: AMQPError) -> None:
        channel = self.channels.pop(number, None)
        if channel is not None:
            channel.teardown()
        self.write(self.conn.close_channel(number, error))

    def _connection_error(self, error: AMQPError, lost_sync: bool) -> None:
        log.info("closing connection from %s:%s: %s", self.peer[0], self.peer[1], error)
        self.failed = error.code != ReplyCode.CONNECTION_FORCED
        if self.phase in ("starting", "tuning"):
            # RabbitMQ 3.10 answers a broken handshake with silence: it drops the socket after
            # a delay, so that failed logins cannot be retried in a tight loop.
            self.closed = True
            self.conn.close_connection(error)
            self.transport.close_silently()
            return
        self._closing = True
        self._teardown_channels()
        self.write(self.conn.close_connection(error))
        # RabbitMQ gives the client a moment to read the close, then drops the socket
        # if it never answers (or at once when the byte stream can no longer be trusted).
        self.transport.close_after_grace()

    def _teardown_channels(self) -> None:
        channels, self.channels = self.channels, {}
        for channel in channels.values():
            channel.teardown()

    # --- handshake ----------------------------------------------------------------------------

    def _send_start(self) -> None:
        properties = {
            "capabilities": {name: True for name in CAPABILITIES},
            "cluster_name": self.broker.config.cluster_name,
            "copyright": "Leveret contributors",
            "information": "Licensed under the Apache License 2.0",
            "platform": f"Python {platform.python_version()}",
            "product": "Leveret",
            "version": __version__,
        }
        self.write(
            method_frame(
                0,
                m.ConnectionStart(0, 9, properties, " ".join(self.mechanisms).encode(), b"en_US"),
            )
        )

    def _connection_method(self, method: m.Method) -> None:
        kind = type(method)
        if kind is m.ConnectionStartOk:
            self._start_ok(method)  # type: ignore[arg-type]
        elif kind is m.ConnectionTuneOk:
            self.phase = "opening"
            self.frame_max = self.conn.frame_max
            self.transport.heartbeat_negotiated(self.conn.heartbeat)
        elif kind is m.ConnectionOpen:
            self._open(method)  # type: ignore[arg-type]
        elif kind is m.ConnectionClose:
            self.release()
            self.write(method_frame(0, m.ConnectionCloseOk()))
            self.transport.close_when_client_does()
        elif kind is m.ConnectionCloseOk:
            self.transport.close()
        elif kind is m.ConnectionUpdateSecret:
            self.write(method_frame(0, m.ConnectionUpdateSecretOk()))

    def _start_ok(self, method: m.ConnectionStartOk) -> None:
        self.client_properties = method.client_properties
        if method.mechanism not in self.mechanisms:
            raise AMQPError(
                ReplyCode.COMMAND_INVALID,
                f"invalid authentication mechanism '{method.mechanism}'",
                method.ids,
            )
        self.auth_mechanism = method.mechanism
        if method.mechanism == "EXTERNAL":
            # The user is named by the client's certificate, which TLS has already checked.
            config = self.broker.config
            username, refusal = external_login(
                self.tls, config.ssl_cert_login_from, config.ssl_options
            )
            if refusal is None and username not in self.broker.users:
                refusal = f"user '{username}' - invalid credentials"
        else:
            try:
                username, password = parse_response(method.mechanism, method.response)
            except SaslError as exc:
                raise AMQPError(ReplyCode.SYNTAX_ERROR, str(exc), method.ids) from exc
            refusal = self.broker.authenticate(username, password)
        local_only = username in self.broker.config.loopback_users
        if refusal is None and local_only and not is_loopback(self.peer[0]):
            refusal = f"user '{username}' can only connect via localhost"
        if refusal is not None:
            who = username or f"a {method.mechanism} login"
            log.warning("login refused for %s from %s: %s", who, self.peer[0], refusal)
            if self.client_capability("authentication_failure_close"):
                error = AMQPError(
                    ReplyCode.ACCESS_REFUSED,
                    f"Login was refused using authentication mechanism {method.mechanism}. "
                    "For details see the broker logfile.",
                    hard=True,
                )
                self.write(self.conn.close_connection(error))
            self.closed = True
            self.transport.close_after_grace()
            return
        self.username = username
        self.phase = "tuning"
        self.write(
            method_frame(
                0, m.ConnectionTune(DEFAULT_CHANNEL_MAX, DEFAULT_FRAME_MAX, DEFAULT_HEARTBEAT)
            )
        )

    def _open(self, method: m.ConnectionOpen) -> None:
        vhost = self.broker.vhosts.get(method.virtual_host)
        if vhost is None:
            raise AMQPError(
                ReplyCode.NOT_ALLOWED, f"vhost {method.virtual_host} not found", method.ids
            )
        self._check_connection_limits(vhost.name, method.ids)
        if not self.broker.may_access_vhost(self.username, vhost.name):
            raise AMQPError(
                ReplyCode.NOT_ALLOWED,
                f"access to vhost '{vhost.name}' refused for user '{self.username}'",
                method.ids,
            )
        self.vhost = vhost
        self.phase = "running"
        self.write(method_frame(0, m.ConnectionOpenOk()))
        open_sessions(self.broker).add(self)
        reason = self.broker.blocking_reason()
        if reason is not None:
            self.set_alarm(reason)

    def _check_connection_limits(self, vhost: str, method: tuple[int, int]) -> None:
        """RabbitMQ's max-connections of the vhost, then of the user, counted across the
        cluster (the other nodes' connections as gossip last reported them)."""
        broker = self.broker
        registry, sessions, elsewhere = broker.registry, open_sessions(broker), broker.peer_clients
        limit = limit_of(registry.vhost_limits.get(vhost), "max-connections")
        if limit is not None:
            here = sum(1 for s in sessions if s.vhost is not None and s.vhost.name == vhost)
            if here + elsewhere("vhost", vhost) >= limit:
                raise vhost_connections_refused(vhost, self.username, limit, method)
        user = self.username
        limit = limit_of(registry.user_limits.get(user), "max-connections")
        if limit is not None:
            here = sum(1 for s in sessions if s.vhost is not None and s.username == user)
            if here + elsewhere("user", user) >= limit:
                raise user_connections_refused(user, limit, method)

    def _check_channel_limit(self, method: tuple[int, int]) -> None:
        user = self.username
        limit = limit_of(self.broker.registry.user_limits.get(user), "max-channels")
        if limit is None:
            return
        opened = sum(len(s.channels) for s in open_sessions(self.broker) if s.username == user)
        if opened + self.broker.peer_clients("user_channels", user) >= limit:
            raise user_channels_refused(user, limit, method)

    def close_for_shutdown(self) -> None:
        """The node is stopping: tell the client, as RabbitMQ does, with 320."""
        self.close_forced("broker forced connection closure with reason 'shutdown'")

    def close_forced(self, text: str) -> None:
        """Close the connection with 320 CONNECTION_FORCED and `text`."""
        if not self.closed:
            self._connection_error(AMQPError(ReplyCode.CONNECTION_FORCED, text), False)

    def awaiting_confirms(self) -> bool:
        """Whether a channel owes its publisher confirms for publishes it has read."""
        return any(channel.publisher.awaiting_confirms() for channel in self.channels.values())


# Each broker's open connections; the broker's model below them knows nothing of connections.
_OPEN: weakref.WeakKeyDictionary[Broker, set[Session]] = weakref.WeakKeyDictionary()


def open_sessions(broker: Broker) -> set[Session]:
    """The broker's open connections (those past connection.open), told of its alarms."""
    sessions = _OPEN.get(broker)
    if sessions is None:
        sessions = _OPEN[broker] = set()
        broker.blocking_listeners.append(functools.partial(_block, sessions))
    return sessions


def _block(sessions: set[Session], reason: str | None) -> None:
    for session in list(sessions):
        session.set_alarm(reason)


def _answers_our_close(event: Event) -> bool:
    """The client's connection.close or close-ok, the only frames read once we closed."""
    return (
        type(event) is MethodReceived
        and event.channel == 0  # type: ignore[union-attr]
        and type(event.method) in (m.ConnectionClose, m.ConnectionCloseOk)  # type: ignore[union-attr]
    )
