"""Stateful property tests of the sans-IO server connection: every state against every input.

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

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from leveret.amqp import methods as m
from leveret.amqp.connection import (
    AcksReceived,
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

VALID_CHANNEL_METHODS: list[m.Method] = [
    m.ChannelFlow(True),
    m.QueueDeclare(queue="q"),
    m.BasicAck(1, False),
    m.BasicQos(0, 10, False),
    m.ConfirmSelect(),
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
        self.steps = 0
        self.calm_steps = 0

    # --- starting points ----------------------------------------------------------------------

    @initialize(
        start=st.sampled_from(["nothing", "header", "open", "channels", "channels"]),
        calm_steps=st.sampled_from([0, 5, 20, 40]),
    )
    def start(self, start: str, calm_steps: int) -> None:
        # Input that is wrong in most states ends a run's interesting part, so some runs hold
        # it back for a while to reach deeper channel and content states first.
        self.calm_steps = calm_steps
        if start == "header":
            self._feed(PROTOCOL_HEADER)
        elif start == "open":
            self._feed(HANDSHAKE)
        elif start == "channels":
            self._feed(
                HANDSHAKE + method_frame(1, m.ChannelOpen()) + method_frame(2, m.ChannelOpen())
            )

    # --- what the client sends ---------------------------------------------------------------

    # Valid input for the state the events describe: the common case, so runs get deep.

    @rule(data=st.data(), channel=st.integers(1, 6))
    def send_channel_open(self, data: st.DataObject, channel: int) -> None:
        if channel in self.channels:
            channel = max(self.channels) + 1
        self._send(data, method_frame(channel, m.ChannelOpen()))

    @precondition(lambda self: any(state is ChannelState.OPEN for state in self.channels.values()))
    @rule(data=st.data(), method=st.sampled_from(VALID_CHANNEL_METHODS))
    def send_channel_method(self, data: st.DataObject, method: m.Method) -> None:
        self._send(data, method_frame(data.draw(self._open_channel()), method))

    @precondition(lambda self: any(state is ChannelState.OPEN for state in self.channels.values()))
    @rule(data=st.data())
    def send_channel_close(self, data: st.DataObject) -> None:
        self._send(
            data, method_frame(data.draw(self._open_channel()), m.ChannelClose(200, "bye", 0, 0))
        )

    @precondition(
        lambda self: any(state is ChannelState.CLOSING for state in self.channels.values())
    )
    @rule(data=st.data())
    def send_close_ok(self, data: st.DataObject) -> None:
        """The client's answer to a channel.close from the node."""
        closing = sorted(c for c, state in self.channels.items() if state is ChannelState.CLOSING)
        channel = data.draw(st.sampled_from(closing))
        self.close_ok_queued.add(channel)
        self._send(data, method_frame(channel, m.ChannelCloseOk()))

    @precondition(lambda self: any(state is ChannelState.OPEN for state in self.channels.values()))
    @rule(data=st.data(), body=st.binary(max_size=250), pieces=st.integers(1, 3))
    def send_publish(self, data: st.DataObject, body: bytes, pieces: int) -> None:
        """A well-formed publish with its body cut into several frames."""
        channel = data.draw(self._open_channel())
        frames = method_frame(channel, m.BasicPublish(0, "", "q", False, False)) + _header(
            channel, len(body)
        )
        step = max(1, -(-len(body) // pieces))
        for start in range(0, len(body), step):
            frames += _frame(3, channel, body[start : start + step])
        self._send(data, frames)

    @precondition(lambda self: any(state is ChannelState.OPEN for state in self.channels.values()))
    @rule(data=st.data())
    def send_too_large_publish(self, data: st.DataObject) -> None:
        """Above max_content_size: a soft error, and the body frames that follow are dropped."""
        channel = data.draw(self._open_channel())
        frames = method_frame(channel, m.BasicPublish(0, "", "q", False, False))
        self._send(
            data,
            frames
            + _header(channel, MAX_CONTENT + 200)
            + _body(channel, 100)
            + _body(channel, 200),
        )

    @rule(
        data=st.data(),
        method=st.sampled_from(
            [m.ConnectionUpdateSecret(b"secret", "rotation"), m.ConnectionCloseOk()]
        ),
    )
    def send_harmless_channel_zero_method(self, data: st.DataObject, method: m.Method) -> None:
        self._send(data, method_frame(0, method))

    @rule(data=st.data())
    def send_heartbeat(self, data: st.DataObject) -> None:
        self._send(data, HEARTBEAT_FRAME)

    # Input that is wrong for some or all states: channel 0, any channel, content out of order.

    @precondition(lambda self: self.steps >= self.calm_steps)
    @rule(data=st.data(), method=st.sampled_from(CHANNEL_ZERO_METHODS))
    def send_any_channel_zero_method(self, data: st.DataObject, method: m.Method) -> None:
        self._send(data, method_frame(0, method))

    @precondition(lambda self: self.steps >= self.calm_steps)
    @rule(
        data=st.data(),
        channel=CHANNELS,
        piece=st.sampled_from(["method", "header", "body"]),
        method=st.sampled_from(CHANNEL_METHODS),
        body_size=st.sampled_from([0, 1, 10, 200, MAX_CONTENT, MAX_CONTENT + 1, 600_000_000]),
        class_id=st.sampled_from([60, 60, 50]),
    )
    def send_any_channel_frame(
        self,
        data: st.DataObject,
        channel: int,
        piece: str,
        method: m.Method,
        body_size: int,
        class_id: int,
    ) -> None:
        if piece == "method":
            if isinstance(method, m.ChannelCloseOk):
                self.close_ok_queued.add(channel)
            self._send(data, method_frame(channel, method))
        elif piece == "header":
            self._send(data, _header(channel, body_size, class_id))
        else:
            self._send(data, _body(channel, body_size % 300))

    @precondition(lambda self: self.steps >= self.calm_steps)
    @rule(
        hostile=st.sampled_from(
            [
                "header",
                "heartbeat-on-channel",
                "frame-type",
                "oversized",
                "frame-end",
                "truncated",
                "garbage",
            ]
        ),
        channel=st.sampled_from([0, 1]),
        data=st.data(),
    )
    def send_hostile_input(self, hostile: str, channel: int, data: st.DataObject) -> None:
        """What real clients never send; one rule, so that valid input stays the common case."""
        if hostile == "header":
            frames = data.draw(
                st.sampled_from([PROTOCOL_HEADER, b"AMQP\x01\x01\x00\x0a", b"GET / HT"])
            )
        elif hostile == "heartbeat-on-channel":
            frames = _frame(8, 1, b"")
        elif hostile == "frame-type":
            frames = _frame(data.draw(st.sampled_from([0, 4, 9, 255])), channel, b"x")
        elif hostile == "oversized":
            # Only the head of a frame announcing more than frame_max: never wait for the rest.
            extra = data.draw(st.sampled_from([1, 9, 1 << 20, 0xFFFFFFFF - 131072]))
            frames = struct.pack(">BHI", 1, channel, 131072 + extra)
        elif hostile == "frame-end":
            end = data.draw(st.integers(0, 255).filter(lambda b: b != 0xCE))
            frames = _frame(1, channel, m.ChannelOpen().encode(), end)
        elif hostile == "truncated":
            payload = data.draw(st.sampled_from(CHANNEL_ZERO_METHODS + CHANNEL_METHODS)).encode()
            frames = _frame(1, channel, payload[: data.draw(st.integers(0, len(payload) - 1))])
        else:
            frames = data.draw(st.binary(min_size=1, max_size=64))
        self._send(data, frames)

    def _open_channel(self) -> st.SearchStrategy[int]:
        """A channel the events say is open."""
        return st.sampled_from(
            sorted(c for c, state in self.channels.items() if state is ChannelState.OPEN)
        )

    # --- what the node does on its own --------------------------------------------------------

    @precondition(lambda self: self.conn.state is ConnectionState.OPEN)
    @rule(channel=CHANNELS)
    def node_closes_channel(self, channel: int) -> None:
        """A soft error found by the channel logic (say a 404): the session closes the channel."""
        if self.channels.get(channel) is not ChannelState.OPEN:
            return
        self.conn.close_channel(
            channel, AMQPError(ReplyCode.NOT_FOUND, "no queue 'q' in vhost '/'", (50, 10))
        )
        self.channels[channel] = ChannelState.CLOSING
        self.close_ok_queued.discard(channel)

    @precondition(
        lambda self: self.conn.state in (ConnectionState.OPEN, ConnectionState.AWAITING_OPEN)
    )
    @rule()
    def node_closes_connection(self) -> None:
        """A hard error found by the channel logic (say a 503), or the node shutting down."""
        self.conn.close_connection(
            AMQPError(ReplyCode.CONNECTION_FORCED, "broker forced connection closure")
        )
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

    def _send(self, data: st.DataObject, frames: bytes) -> None:
        """Queue bytes, then deliver what is queued up to a random point (often all of it).

        Cutting anywhere splits frames across reads and merges the rest with the next step's.
        """
        self.steps += 1
        self.pending += frames
        size = len(self.pending)
        cut = data.draw(st.one_of(st.just(size), st.integers(0, size)), label="delivered")
        # As the asyncio layer does, sometimes only a few frames are handled per turn.
        max_frames = data.draw(st.sampled_from([0, 0, 1, 3]), label="frames per turn")
        self._feed(bytes(self.pending[:cut]), max_frames)
        del self.pending[:cut]

    # --- the checks ---------------------------------------------------------------------------

    def _feed(self, data: bytes, max_frames: int = 0) -> None:
        """receive_data, then more turns while whole frames wait (bounded: each turn eats one)."""
        for turn in range(len(data) // 8 + 2):
            was_dead = self.lost_sync or self.conn.state is ConnectionState.CLOSED
            events = self.conn.receive_data(data if turn == 0 else b"", max_frames)
            if was_dead:
                assert events == [], f"events after the connection stopped reading: {events}"
            for index, event in enumerate(events):
                self._check_event(event, is_last=index == len(events) - 1)
            if self.conn.state is ConnectionState.OPEN:
                self.frame_max_seen = self.conn.frame_max
            if not self.conn.has_buffered_frames:
                return
        raise AssertionError("has_buffered_frames stayed true: a turn handled no frame")

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
            if self.failed:
                # Once our connection.close is out, only a framing error is still reported.
                assert event.lost_sync, f"a second connection.close: {event.error}"
            else:
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
        elif isinstance(event, AcksReceived):
            assert event.delivery_tags
            for tag in event.delivery_tags:
                self._check_method(event.channel, m.BasicAck(tag, False))
        elif isinstance(event, ContentReceived):
            assert self.opened and not self.failed
            assert self.channels.get(event.channel) is ChannelState.OPEN
            assert isinstance(event.method, m.BasicPublish)
            class_id, _weight, body_size = struct.unpack_from(">HHQ", event.header)
            assert class_id == 60 and body_size == len(event.body) <= MAX_CONTENT
        else:
            pytest.fail(f"unknown event {event!r}")

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
        assert self.opened and not self.failed, (
            f"{method} on channel {channel} outside an open connection"
        )
        state = self.channels.get(channel)
        if isinstance(method, m.ChannelOpen):
            assert state is None, f"channel.open accepted on channel {channel} in state {state}"
            # As RabbitMQ 3.10, channel_max bounds how many channels are open, not their numbers.
            assert len(self.channels) < self.conn.channel_max
            self.channels[channel] = ChannelState.OPEN
        elif isinstance(method, m.ChannelClose):
            assert state is not None
            if state is ChannelState.OPEN:
                del self.channels[channel]
        else:
            assert state is ChannelState.OPEN, (
                f"{method} delivered on channel {channel} in state {state}"
            )
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
                assert state is ChannelState.CLOSING and channel in self.close_ok_queued, (
                    channel,
                    state,
                )
                del self.channels[channel]
        assert actual == self.channels

    @invariant()
    def buffered_input_is_bounded(self) -> None:
        limit = max(self.frame_max_seen, self.conn.frame_max) + FRAME_OVERHEAD
        assert self.conn.buffered_bytes <= limit, (self.conn.buffered_bytes, limit)
        for assembly in self.conn._assemblies.values():
            assert sum(len(part) for part in assembly.parts) <= MAX_CONTENT

    @invariant()
    def stopped_connections_buffer_nothing_new(self) -> None:
        if self.lost_sync:
            assert self.conn.buffered_bytes == 0


ConnectionMachine.TestCase.settings = settings(
    max_examples=450,
    stateful_step_count=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_connection_state_machine = ConnectionMachine.TestCase


# --- after the node's connection.close: RabbitMQ discards all input but close and close-ok --------


def _closing_connection() -> ServerConnection:
    """A connection whose node has answered a second channel.open with connection.close 504."""
    conn = ServerConnection()
    events = conn.receive_data(
        HANDSHAKE + method_frame(1, m.ChannelOpen()) + method_frame(1, m.ChannelOpen())
    )
    failure = events[-1]
    assert isinstance(failure, ConnectionFailed) and failure.error.code == ReplyCode.CHANNEL_ERROR
    conn.close_connection(failure.error)
    return conn


@pytest.mark.parametrize(
    "frame",
    [
        HEARTBEAT_FRAME,
        method_frame(0, m.ChannelOpen()),
        method_frame(0, m.ConnectionTuneOk(1, 4096, 0)),
        _header(0, 1),
        method_frame(1, m.QueueDeclare(queue="q")),
        method_frame(1, m.BasicPublish(0, "", "q", False, False)) + _header(1, 3) + _body(1, 3),
        method_frame(7, m.ChannelClose(200, "bye", 0, 0)),
    ],
    ids=[
        "heartbeat",
        "channel.open-on-0",
        "tune-ok",
        "header-on-0",
        "queue.declare",
        "publish",
        "channel.close",
    ],
)
def test_input_ignored_while_closing(frame: bytes) -> None:
    conn = _closing_connection()
    assert conn.receive_data(frame) == []
    assert conn.state is ConnectionState.CLOSING


# Observed on RabbitMQ 3.10 over a raw socket: after its connection.close it sends nothing more
# for these either, and waits for close-ok.
@pytest.mark.parametrize(
    "frame",
    [_frame(9, 1, b"x"), _frame(8, 1, b""), _frame(1, 0, struct.pack(">HHB", 10, 50, 0))],
    ids=["unknown-frame-type", "heartbeat-on-channel-1", "truncated-connection-close"],
)
def test_input_discarded_while_closing(frame: bytes) -> None:
    conn = _closing_connection()
    assert conn.receive_data(frame) == []
    assert conn.state is ConnectionState.CLOSING


def test_no_content_after_the_node_closes() -> None:
    conn = ServerConnection()
    conn.receive_data(HANDSHAKE + method_frame(1, m.ChannelOpen()))
    assert (
        conn.receive_data(method_frame(1, m.BasicPublish(0, "", "q", False, False)) + _header(1, 3))
        == []
    )
    conn.close_connection(
        AMQPError(
            ReplyCode.CONNECTION_FORCED, "broker forced connection closure with reason 'shutdown'"
        )
    )
    assert conn.receive_data(_body(1, 3)) == []


def test_closed_connection_has_no_frames_waiting() -> None:
    conn = _closing_connection()
    conn.receive_data(method_frame(0, m.ConnectionCloseOk()) + HEARTBEAT_FRAME)
    assert conn.state is ConnectionState.CLOSED
    assert not conn.has_buffered_frames


def test_close_and_close_ok_still_heard_while_closing() -> None:
    conn = _closing_connection()
    events = conn.receive_data(method_frame(0, m.ConnectionClose(200, "bye", 0, 0)))
    assert [type(e.method) for e in events if isinstance(e, MethodReceived)] == [m.ConnectionClose]
    events = conn.receive_data(method_frame(0, m.ConnectionCloseOk()))
    assert [type(e.method) for e in events if isinstance(e, MethodReceived)] == [
        m.ConnectionCloseOk
    ]
    assert conn.state is ConnectionState.CLOSED
    assert conn.receive_data(HEARTBEAT_FRAME + _frame(9, 1, b"x")) == []


def _publish(channel: int = 1) -> bytes:
    return method_frame(channel, m.BasicPublish(0, "", "q", False, False))


# Publishes whose header and body follow whole: the parser takes the usual ones in one step,
# and must make of every one of them what it makes of the same bytes read one at a time.
WHOLE_READS = {
    "usual": _publish() + _header(1, 5) + _body(1, 5),
    "several": (_publish() + _header(1, 3) + _body(1, 3)) * 3 + _publish(2),
    "empty body": _publish() + _header(1, 0) + _publish() + _header(1, 2) + _body(1, 2),
    "body in two frames": _publish() + _header(1, 4) + _body(1, 2) + _body(1, 2),
    "body too long": _publish() + _header(1, 2) + _body(1, 3),
    "body on another channel": _publish() + _header(1, 2) + _body(2, 2),
    "header on another channel": _publish() + _header(2, 2) + _body(1, 2),
    "header of another class": _publish() + _header(1, 2, class_id=50) + _body(1, 2),
    "bad end of header": _publish() + _header(1, 2)[:-1] + b"\x00" + _body(1, 2),
    "bad end of body": _publish() + _header(1, 2) + _body(1, 2)[:-1] + b"\x00",
    "larger than allowed": _publish() + _header(1, MAX_CONTENT + 1) + _body(1, MAX_CONTENT + 1),
}


def _described(events: list[Event]) -> list[tuple[object, ...]]:
    described: list[tuple[object, ...]] = []
    for event in events:
        if isinstance(event, (ChannelFailed, ConnectionFailed)):
            error = event.error
            described.append((type(event).__name__, error.code, error.text, error.method))
        else:
            described.append((repr(event),))
    return described


@pytest.mark.parametrize("name", sorted(WHOLE_READS))
def test_a_publish_read_whole_parses_as_one_read_a_byte_at_a_time(name: str) -> None:
    def opened() -> ServerConnection:
        conn = ServerConnection(max_content_size=MAX_CONTENT)
        conn.receive_data(HANDSHAKE + method_frame(1, m.ChannelOpen()))
        conn.receive_data(method_frame(2, m.ChannelOpen()))
        return conn

    data = WHOLE_READS[name]
    whole = opened()
    at_once = whole.receive_data(data)
    piecewise = opened()
    one_by_one = [
        event for i in range(len(data)) for event in piecewise.receive_data(data[i : i + 1])
    ]
    assert _described(at_once) == _described(one_by_one)
    assert (whole.state, whole.channels) == (piecewise.state, piecewise.channels)
    assert any(isinstance(event, ContentReceived) for event in at_once) or name not in {
        "usual",
        "several",
    }
