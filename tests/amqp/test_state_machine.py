"""Stateful property tests of the sans-IO server connection: every state against every kind of input.

A Hypothesis state machine queues frames (valid and invalid channel-0 methods, channel open /
close / close-ok on assorted channel numbers, content frames in and out of order, heartbeats,
garbage) and feeds the queued bytes to `ServerConnection` truncated, split or merged at random.
The test plays the session's part (answering failures with close_channel / close_connection as
`leveret.session.Session` does) and checks after every step that the events are consistent with
the connection and channel states, that a hard error leaves the connection closing or closed,
that nothing follows a failure that lost the framing, and that buffered input stays bounded.
"""

from __future__ import annotations

import struct

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from leveret.amqp import methods as m
from leveret.amqp.connection import (
    BadProtocolHeader,
    ChannelFailed,
    ChannelState,
    ConnectionFailed,
    ConnectionState,
    ContentReceived,
    Event,
    MethodReceived,
    ProtocolHeaderReceived,
    ServerConnection,
)
from leveret.amqp.constants import FRAME_MIN_SIZE, FRAME_OVERHEAD, PROTOCOL_HEADER
from leveret.amqp.errors import AMQPError, ReplyCode
from leveret.amqp.frames import HEARTBEAT_FRAME, method_frame

# Small enough that Hypothesis reaches it, so the channel-level size refusal is exercised too.
MAX_CONTENT = 1000

CHANNELS = st.sampled_from([1, 2, 3, 2047, 2048, 65535])

CHANNEL_ZERO_METHODS: list[m.Method] = [
    m.ConnectionStartOk({"capabilities": {}}, "PLAIN", b"\x00guest\x00guest", "en_US"),
    m.ConnectionStartOk({}, "AMQPLAIN", b"", "en_US"),
    m.ConnectionSecureOk(b"x"),
    m.ConnectionTuneOk(2047, 131072, 0),
    m.ConnectionTuneOk(1, 4096, 60),
    m.ConnectionTuneOk(0, 131072, 0),
    m.ConnectionTuneOk(2048, 131072, 0),
    m.ConnectionTuneOk(2047, 4095, 0),
    m.ConnectionTuneOk(2047, 0, 0),
    m.ConnectionTuneOk(2047, 1 << 20, 0),
    m.ConnectionOpen("/"),
    m.ConnectionClose(200, "bye", 0, 0),
    m.ConnectionCloseOk(),
    m.ConnectionUpdateSecret(b"secret", "rotation"),
    # Methods only a server sends, and methods of other classes, on channel 0.
    m.ConnectionStart(),
    m.ConnectionTune(2047, 131072, 60),
    m.ConnectionOpenOk(),
    m.ConnectionBlocked("low on memory"),
    m.ChannelOpen(),
    m.QueueDeclare(queue="q"),
    m.BasicAck(1, False),
]

CHANNEL_METHODS: list[m.Method] = [
    m.ChannelOpen(),
    m.ChannelClose(200, "bye", 0, 0),
    m.ChannelCloseOk(),
    m.ChannelFlow(True),
    m.QueueDeclare(queue="q"),
    m.BasicAck(1, False),
    m.BasicQos(0, 10, False),
    m.ConfirmSelect(),
    m.BasicPublish(0, "", "q", False, False),
    m.BasicPublish(0, "amq.direct", "k" * 255, True, False),
    # Content-bearing methods a client may not send.
    m.BasicDeliver("ctag", 1, False, "", "q"),
    m.BasicReturn(312, "NO_ROUTE", "", "q"),
]


def _frame(kind: int, channel: int, payload: bytes, end: int = 0xCE) -> bytes:
    return struct.pack(">BHI", kind, channel, len(payload)) + payload + bytes((end,))


def _header(channel: int, body_size: int, class_id: int = 60) -> bytes:
    return _frame(2, channel, struct.pack(">HHQH", class_id, 0, body_size, 0))


def _body(channel: int, size: int) -> bytes:
    return _frame(3, channel, b"b" * size)


HANDSHAKE = (
    PROTOCOL_HEADER
    + method_frame(0, m.ConnectionStartOk({}, "PLAIN", b"\x00guest\x00guest", "en_US"))
    + method_frame(0, m.ConnectionTuneOk(2047, 131072, 0))
    + method_frame(0, m.ConnectionOpen("/"))
)


class ConnectionMachine(RuleBasedStateMachine):
    """Drives one ServerConnection; the model below is what the events say happened."""

    def __init__(self) -> None:
        super().__init__()
        self.conn = ServerConnection(max_content_size=MAX_CONTENT)
        self.pending = bytearray()
        # What the events told us: the connection reached OPEN, and each channel's state.
        self.opened = False
        self.channels: dict[int, ChannelState] = {}
        # Channels the node closed whose close-ok has been queued: they may vanish silently.
        self.close_ok_queued: set[int] = set()
        self.failed = False
        self.lost_sync = False
        self.frame_max_seen = FRAME_MIN_SIZE

    # --- starting points ----------------------------------------------------------------------

    @initialize(start=st.sampled_from(["nothing", "header", "open", "channels"]))
    def start(self, start: str) -> None:
        if start == "header":
            self.pending += PROTOCOL_HEADER
        elif start in ("open", "channels"):
            self.pending += HANDSHAKE
        if start == "channels":
            self.pending += method_frame(1, m.ChannelOpen()) + method_frame(2, m.ChannelOpen())
        if start != "nothing":
            self._feed(bytes(self.pending))
            self.pending.clear()

    # --- what the client queues ---------------------------------------------------------------

    @rule(method=st.sampled_from(CHANNEL_ZERO_METHODS))
    def queue_channel_zero_method(self, method: m.Method) -> None:
        self.pending += method_frame(0, method)

    @rule(channel=CHANNELS)
    def queue_channel_open(self, channel: int) -> None:
        self.pending += method_frame(channel, m.ChannelOpen())

    @rule(data=st.data(), method=st.sampled_from(CHANNEL_METHODS))
    def queue_channel_method(self, data: st.DataObject, method: m.Method) -> None:
        channel = data.draw(self._channel_numbers())
        if isinstance(method, m.ChannelCloseOk):
            self.close_ok_queued.add(channel)
        self.pending += method_frame(channel, method)

    @rule(data=st.data())
    def queue_close_ok(self, data: st.DataObject) -> None:
        """The client's answer to a channel.close from the node."""
        channel = data.draw(self._channel_numbers())
        self.close_ok_queued.add(channel)
        self.pending += method_frame(channel, m.ChannelCloseOk())

    @rule(data=st.data(), body=st.binary(max_size=250), pieces=st.integers(1, 3))
    def queue_whole_publish(self, data: st.DataObject, body: bytes, pieces: int) -> None:
        """A well-formed publish with its body cut into several frames."""
        channel = data.draw(self._channel_numbers())
        self.pending += method_frame(channel, m.BasicPublish(0, "", "q", False, False))
        self.pending += _header(channel, len(body))
        step = max(1, -(-len(body) // pieces))
        for start in range(0, len(body), step):
            self.pending += _frame(3, channel, body[start : start + step])

    @rule(
        data=st.data(),
        body_size=st.sampled_from([0, 1, 10, 200, MAX_CONTENT, MAX_CONTENT + 1, 600_000_000]),
        class_id=st.sampled_from([60, 60, 60, 50]),
    )
    def queue_content_header(self, data: st.DataObject, body_size: int, class_id: int) -> None:
        """A content header on its own: in order after a publish, or out of order."""
        self.pending += _header(data.draw(self._channel_numbers()), body_size, class_id)

    @rule(data=st.data(), size=st.integers(0, 300))
    def queue_content_body(self, data: st.DataObject, size: int) -> None:
        self.pending += _body(data.draw(self._channel_numbers()), size)

    @rule()
    def queue_heartbeat(self) -> None:
        self.pending += HEARTBEAT_FRAME

    @rule(
        hostile=st.sampled_from(
            ["header", "heartbeat-on-channel", "frame-type", "oversized", "frame-end", "truncated", "garbage"]
        ),
        channel=st.sampled_from([0, 1]),
        data=st.data(),
    )
    def queue_hostile_input(self, hostile: str, channel: int, data: st.DataObject) -> None:
        """What real clients never send; one rule, so that valid input stays the common case."""
        if hostile == "header":
            self.pending += data.draw(st.sampled_from([PROTOCOL_HEADER, b"AMQP\x01\x01\x00\x0a", b"GET / HT"]))
        elif hostile == "heartbeat-on-channel":
            self.pending += _frame(8, 1, b"")
        elif hostile == "frame-type":
            self.pending += _frame(data.draw(st.sampled_from([0, 4, 9, 255])), channel, b"x")
        elif hostile == "oversized":
            # Only the head of a frame announcing more than frame_max: the rest must never be awaited.
            extra = data.draw(st.sampled_from([1, 9, 1 << 20, 0xFFFFFFFF - 131072]))
            self.pending += struct.pack(">BHI", 1, channel, 131072 + extra)
        elif hostile == "frame-end":
            end = data.draw(st.integers(0, 255).filter(lambda b: b != 0xCE))
            self.pending += _frame(1, channel, m.ChannelOpen().encode(), end)
        elif hostile == "truncated":
            payload = data.draw(st.sampled_from(CHANNEL_ZERO_METHODS + CHANNEL_METHODS)).encode()
            self.pending += _frame(1, channel, payload[: data.draw(st.integers(0, len(payload) - 1))])
        else:
            self.pending += data.draw(st.binary(min_size=1, max_size=64))

    def _channel_numbers(self) -> st.SearchStrategy[int]:
        """Mostly channels the model knows about, sometimes any number."""
        known = sorted(self.channels)
        return st.sampled_from(known) | CHANNELS if known else CHANNELS

    # --- what the node does on its own --------------------------------------------------------

    @precondition(lambda self: self.conn.state is ConnectionState.OPEN)
    @rule(channel=CHANNELS)
    def node_closes_channel(self, channel: int) -> None:
        """A soft error found by the channel logic (say a 404): the session closes the channel."""
        if self.channels.get(channel) is not ChannelState.OPEN:
            return
        self.conn.close_channel(channel, AMQPError(ReplyCode.NOT_FOUND, "no queue 'q' in vhost '/'", (50, 10)))
        self.channels[channel] = ChannelState.CLOSING
        self.close_ok_queued.discard(channel)

    @precondition(lambda self: self.conn.state in (ConnectionState.OPEN, ConnectionState.AWAITING_OPEN))
    @rule()
    def node_closes_connection(self) -> None:
        self.conn.close_connection(AMQPError(ReplyCode.CONNECTION_FORCED, "broker forced connection closure"))
        self.failed = True

    # --- delivery of the queued bytes ---------------------------------------------------------

    @rule(data=st.data())
    def deliver_split(self, data: st.DataObject) -> None:
        """Everything queued, cut at random points into several receive_data calls."""
        stream = bytes(self.pending)
        self.pending.clear()
        cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=5)))
        start = 0
        for cut in [*cuts, len(stream)]:
            self._feed(stream[start:cut])
            start = cut

    @rule(data=st.data())
    def deliver_prefix(self, data: st.DataObject) -> None:
        """Only part of what is queued: the connection must wait for the rest."""
        cut = data.draw(st.integers(0, len(self.pending)))
        self._feed(bytes(self.pending[:cut]))
        del self.pending[:cut]

    # --- the checks ---------------------------------------------------------------------------

    def _feed(self, data: bytes) -> None:
        was_dead = self.lost_sync or self.conn.state is ConnectionState.CLOSED
        events = self.conn.receive_data(data)
        if was_dead:
            assert events == [], f"events after the connection stopped reading: {events}"
        for index, event in enumerate(events):
            self._check_event(event, is_last=index == len(events) - 1)
        if self.conn.state is ConnectionState.OPEN:
            self.frame_max_seen = self.conn.frame_max

    def _check_event(self, event: Event, is_last: bool) -> None:
        conn = self.conn
        assert not self.lost_sync, f"{event} after a failure that lost the framing"
        if isinstance(event, ConnectionFailed):
            assert event.error.hard, event.error
            assert event.error.code >= 500, event.error
            assert conn.state in (ConnectionState.CLOSING, ConnectionState.CLOSED)
            if event.lost_sync:
                assert is_last, "events followed a failure that lost the framing"
                self.lost_sync = True
            if not self.failed:
                # The session answers the first hard error with connection.close.
                conn.close_connection(event.error)
            self.failed = True
            assert conn.state in (ConnectionState.CLOSING, ConnectionState.CLOSED)
        elif isinstance(event, BadProtocolHeader):
            assert is_last and conn.state is ConnectionState.CLOSED and not self.opened
            self.lost_sync = True
        elif isinstance(event, ProtocolHeaderReceived):
            assert not self.opened and not self.failed
        elif isinstance(event, ChannelFailed):
            assert self.channels.get(event.channel) is ChannelState.OPEN
            assert not event.error.hard and event.error.code == ReplyCode.PRECONDITION_FAILED
            conn.close_channel(event.channel, event.error)
            self.channels[event.channel] = ChannelState.CLOSING
            self.close_ok_queued.discard(event.channel)
        elif isinstance(event, MethodReceived):
            self._check_method(event.channel, event.method)
        elif isinstance(event, ContentReceived):
            assert self.opened and not self.failed
            assert self.channels.get(event.channel) is ChannelState.OPEN
            assert isinstance(event.method, m.BasicPublish)
            class_id, _weight, body_size = struct.unpack_from(">HHQ", event.header)
            assert class_id == 60 and body_size == len(event.body) <= MAX_CONTENT
        else:
            raise AssertionError(f"unknown event {event!r}")

    def _check_method(self, channel: int, method: m.Method) -> None:
        if channel == 0:
            if isinstance(method, m.ConnectionOpen):
                assert not self.opened and not self.failed
                self.opened = True
            elif isinstance(method, m.ConnectionTuneOk):
                assert FRAME_MIN_SIZE <= self.conn.frame_max <= 131072
                assert 1 <= method.channel_max <= 2047
            elif self.failed:
                assert isinstance(method, (m.ConnectionClose, m.ConnectionCloseOk)), method
            return
        assert self.opened and not self.failed, f"{method} on channel {channel} outside an open connection"
        assert channel <= self.conn.channel_max
        state = self.channels.get(channel)
        if isinstance(method, m.ChannelOpen):
            assert state is None, f"channel.open accepted on channel {channel} in state {state}"
            self.channels[channel] = ChannelState.OPEN
        elif isinstance(method, m.ChannelClose):
            assert state is not None
            if state is ChannelState.OPEN:
                del self.channels[channel]
        else:
            assert state is ChannelState.OPEN, f"{method} delivered on channel {channel} in state {state}"
            assert not method.HAS_CONTENT

    @invariant()
    def hard_errors_close_the_connection(self) -> None:
        if self.failed:
            assert self.conn.state in (ConnectionState.CLOSING, ConnectionState.CLOSED)

    @invariant()
    def channels_match_the_events(self) -> None:
        if self.failed or self.conn.state is not ConnectionState.OPEN:
            return
        actual = dict(self.conn.channels)
        for channel, state in list(self.channels.items()):
            if channel not in actual:
                # Only a channel the node closed may go away silently, on the client's close-ok.
                assert state is ChannelState.CLOSING and channel in self.close_ok_queued, (channel, state)
                del self.channels[channel]
        assert actual == self.channels

    @invariant()
    def buffered_input_is_bounded(self) -> None:
        limit = max(self.frame_max_seen, self.conn.frame_max) + FRAME_OVERHEAD
        assert len(self.conn._buffer) <= limit, (len(self.conn._buffer), limit)
        for assembly in self.conn._assemblies.values():
            assert sum(len(part) for part in assembly.parts) <= MAX_CONTENT

    @invariant()
    def stopped_connections_buffer_nothing_new(self) -> None:
        if self.lost_sync:
            assert len(self.conn._buffer) == 0


ConnectionMachine.TestCase.settings = settings(
    max_examples=200,
    stateful_step_count=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_connection_state_machine = ConnectionMachine.TestCase
