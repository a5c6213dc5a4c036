"""Sans-IO server side of an AMQP 0-9-1 connection: bytes in, events out, legal states as tables."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import Enum, auto

from . import methods as m
from .constants import (
    FRAME_BODY,
    FRAME_END,
    FRAME_HEADER,
    FRAME_HEARTBEAT,
    FRAME_METHOD,
    FRAME_MIN_SIZE,
    FRAME_OVERHEAD,
    PROTOCOL_HEADER,
)
from .errors import AMQPError, ReplyCode
from .fields import DecodeError, decode_shortstr
from .frames import method_frame
from .methods import Method, UnknownMethod, decode_method

# RabbitMQ's hard ceiling on a single message (the assembler's ?MAX_MSG_SIZE).
MAX_CONTENT_SIZE = 536870912

_FRAME_HEAD = struct.Struct(">BHI")
_UNPACK_HEAD = _FRAME_HEAD.unpack_from
_UNPACK_I = struct.Struct(">I").unpack_from
_UNPACK_QB = struct.Struct(">QB").unpack_from
_UNPACK_HHQ = struct.Struct(">HHQ").unpack_from
_CLOSE_IDS = (struct.pack(">HH", 10, 50), struct.pack(">HH", 10, 51))
_PUBLISH_KEY = (60 << 16) | 40
_ACK_KEY = (60 << 16) | 80
_ACK_IDS = struct.pack(">HH", 60, 80)
_PUBLISH_IDS = struct.pack(">HH", 60, 40)


# --- events -----------------------------------------------------------------------------


@dataclass(slots=True)
class ProtocolHeaderReceived:
    """The client sent a valid protocol header: answer with connection.start."""


@dataclass(slots=True)
class BadProtocolHeader:
    """Not AMQP 0-9-1: answer with our protocol header and close the socket."""


@dataclass(slots=True)
class MethodReceived:
    channel: int
    method: Method


@dataclass(slots=True)
class AcksReceived:
    """basic.ack frames, each for one delivery (not `multiple`), one after the other on one
    channel: what a consumer that acknowledges every message sends. They are handled in a row,
    as their frames would be one at a time, without a method object and a dispatch each."""

    channel: int
    delivery_tags: list[int]


@dataclass(slots=True)
class ContentReceived:
    """A complete content-bearing method (basic.publish): method, raw header payload, body."""

    channel: int
    method: Method
    header: bytes
    body: bytes


@dataclass(slots=True)
class ChannelFailed:
    """A soft error found while assembling content: close the channel with it."""

    channel: int
    error: AMQPError


@dataclass(slots=True)
class ConnectionFailed:
    """A hard error: send connection.close with it. `lost_sync` means no more input is read."""

    error: AMQPError
    lost_sync: bool


Event = (
    ProtocolHeaderReceived
    | BadProtocolHeader
    | MethodReceived
    | AcksReceived
    | ContentReceived
    | ChannelFailed
    | ConnectionFailed
)


# --- states -----------------------------------------------------------------------------


class ConnectionState(Enum):
    AWAITING_HEADER = auto()
    AWAITING_START_OK = auto()
    AWAITING_TUNE_OK = auto()
    AWAITING_OPEN = auto()
    OPEN = auto()
    CLOSING = auto()  # we sent connection.close and wait for close-ok
    CLOSED = auto()


S = ConnectionState
# Module constants: enum attribute lookups (about 75 ns each) are slow on the per-frame path.
_CLOSED, _CLOSING, _OPEN, _AWAITING_HEADER = S.CLOSED, S.CLOSING, S.OPEN, S.AWAITING_HEADER

# Methods a client may send on channel 0, by state, and the state each one leads to.
CHANNEL_ZERO_TRANSITIONS: dict[tuple[ConnectionState, type[Method]], ConnectionState] = {
    (S.AWAITING_START_OK, m.ConnectionStartOk): S.AWAITING_TUNE_OK,
    (S.AWAITING_TUNE_OK, m.ConnectionSecureOk): S.AWAITING_TUNE_OK,
    (S.AWAITING_TUNE_OK, m.ConnectionTuneOk): S.AWAITING_OPEN,
    (S.AWAITING_OPEN, m.ConnectionOpen): S.OPEN,
    (S.OPEN, m.ConnectionClose): S.CLOSED,
    (S.OPEN, m.ConnectionCloseOk): S.OPEN,
    (S.OPEN, m.ConnectionUpdateSecret): S.OPEN,
    (S.CLOSING, m.ConnectionClose): S.CLOSING,
    (S.CLOSING, m.ConnectionCloseOk): S.CLOSED,
    (S.AWAITING_START_OK, m.ConnectionClose): S.CLOSED,
    (S.AWAITING_TUNE_OK, m.ConnectionClose): S.CLOSED,
    (S.AWAITING_OPEN, m.ConnectionClose): S.CLOSED,
}

_STATE_NAMES = {
    S.AWAITING_START_OK: "starting",
    S.AWAITING_TUNE_OK: "tuning",
    S.AWAITING_OPEN: "opening",
    S.OPEN: "running",
    S.CLOSING: "closing",
}


class ChannelState(Enum):
    OPEN = auto()
    CLOSING = auto()  # we sent channel.close and wait for close-ok


_CHANNEL_OPEN, _CHANNEL_CLOSING = ChannelState.OPEN, ChannelState.CLOSING


class _Assembly:
    """A content-bearing method waiting for its header and body frames."""

    __slots__ = ("header", "method", "parts", "remaining")

    def __init__(self, method: Method) -> None:
        self.method = method
        self.header: bytes | None = None
        self.remaining = 0
        self.parts: list[bytes] = []


def _snippet(payload: bytes) -> str:
    if len(payload) <= 16:
        return "all octets = <<" + ",".join(str(b) for b in payload) + ">>"
    return "first 16 octets = <<" + ",".join(str(b) for b in payload[:16]) + ">>"


def _unexpected_frame(kind: int, payload: bytes) -> AMQPError:
    return AMQPError(ReplyCode.UNEXPECTED_FRAME, f"type {kind}, {_snippet(payload)}")


def _frame_error(kind: int, payload: bytes, reason: str) -> AMQPError:
    return AMQPError(ReplyCode.FRAME_ERROR, f"type {kind}, {_snippet(payload)}: {reason}")


class ServerConnection:
    """Parses client bytes into events and tracks connection and channel states."""

    def __init__(self, *, max_content_size: int = MAX_CONTENT_SIZE) -> None:
        self.state = S.AWAITING_HEADER
        # RabbitMQ reads the handshake with the minimum frame size until tune-ok.
        self.frame_max = FRAME_MIN_SIZE
        self.channel_max = 0
        self.heartbeat = 0
        self.channels: dict[int, ChannelState] = {}
        self.max_content_size = max_content_size
        self._buffer = b""  # bytes carried over to the next read, from _offset on
        self._offset = 0
        self._assemblies: dict[int, _Assembly] = {}
        self._lost_sync = False

    # --- input ----------------------------------------------------------------------------

    def receive_data(self, data: bytes, max_frames: int = 0) -> list[Event]:
        """Parse bytes into events. With max_frames, stop after that many frames and keep the
        rest for the next call (`has_buffered_frames` tells whether any complete frame waits)."""
        if self._lost_sync or self.state is _CLOSED:
            return []
        offset = self._offset
        if self._buffer:
            if data:
                data = self._buffer[offset:] + data
                offset = 0
            else:
                data = self._buffer
            self._buffer = b""
            self._offset = 0
        events: list[Event] = []
        if self.state is _AWAITING_HEADER:
            if len(data) < 8:
                if not PROTOCOL_HEADER.startswith(data):
                    return self._bad_header(events)
                self._buffer = data
                return events
            if data[:8] != PROTOCOL_HEADER:
                return self._bad_header(events)
            data = data[8:]
            self.state = S.AWAITING_START_OK
            events.append(ProtocolHeaderReceived())
        size = len(data)
        limit = self.frame_max
        assemblies = self._assemblies
        channels = self.channels
        budget = max_frames or -1
        while size - offset >= 7 and budget:
            budget -= 1
            kind, channel, length = _UNPACK_HEAD(data, offset)
            # RabbitMQ tolerates clients that overshoot frame_max by the frame overhead.
            if length > limit:
                error = f"{{frame_too_large,{length},{limit - FRAME_OVERHEAD}}}"
                self._fail(events, _frame_error(kind, b"", error), True)
                break
            end = offset + 7 + length
            if end >= size:
                break
            payload = data[offset + 7 : end]
            if data[end] != FRAME_END:
                self._fail(
                    events,
                    _frame_error(kind, payload, f"{{invalid_frame_end_marker,{data[end]}}}"),
                    True,
                )
                break
            offset = end + 1
            # Hot paths: the header and body frames of a publish being assembled, and basic.ack
            # and basic.publish on an open channel (what _handle_frame would make of them, with
            # fewer questions).
            if kind in (FRAME_BODY, FRAME_HEADER) and channel in assemblies:
                self._continue_content(kind, channel, payload, assemblies[channel], events)
            elif (
                length == 13
                and kind == FRAME_METHOD
                and payload.startswith(_ACK_IDS)
                and self.state is _OPEN
                and channels.get(channel) is _CHANNEL_OPEN
                and channel not in assemblies
            ):
                tag, bits = _UNPACK_QB(payload, 4)
                if bits & 1:
                    events.append(MethodReceived(channel, m.BasicAck(tag, True)))
                    continue
                last = events[-1] if events else None
                if type(last) is AcksReceived and last.channel == channel:
                    last.delivery_tags.append(tag)
                else:
                    events.append(AcksReceived(channel, [tag]))
            elif (
                kind == FRAME_METHOD
                and payload.startswith(_PUBLISH_IDS)
                and self.state is _OPEN
                and channels.get(channel) is _CHANNEL_OPEN
                and channel not in assemblies
            ):
                publish = self._decode(payload, events)  # (a malformed one fails the connection)
                if publish is None:
                    continue
                if budget > 1 or budget < 0:
                    whole = self._whole_content(data, offset, size, channel)
                    if whole is not None:
                        header_end, body_end = whole
                        header = data[offset + 7 : header_end]
                        body = data[header_end + 8 : body_end]
                        events.append(ContentReceived(channel, publish, header, body))
                        offset = body_end + 1
                        budget -= 2
                        continue
                assemblies[channel] = _Assembly(publish)
            else:
                self._handle_frame(kind, channel, payload, events)
                if self._lost_sync or self.state is _CLOSED:
                    break
                limit = self.frame_max
        if self._lost_sync:
            return events
        if offset < size:
            if budget == 0:
                # Stopped by the budget: keep the buffer and an offset, as slicing it on every
                # turn would copy it again.
                self._buffer, self._offset = data, offset
            else:
                self._buffer = data[offset:]  # at most one partial frame
        return events

    def _whole_content(
        self, data: bytes, offset: int, size: int, channel: int
    ) -> tuple[int, int] | None:
        """Where the header and body frames of the publish just read end, if both follow it
        whole in `data`, on its channel, and the one body frame is the whole content (the
        usual small message): it then needs no assembly. None when anything is unusual: the
        frames go the general way, which says what is wrong with them."""
        if size - offset < 22:
            return None
        kind, header_channel, length = _UNPACK_HEAD(data, offset)
        header_end = offset + 7 + length
        if (
            kind != FRAME_HEADER
            or header_channel != channel
            or length < 14
            or length > self.frame_max
            or header_end + 8 > size
            or data[header_end] != FRAME_END
        ):
            return None
        class_id, weight, body_size = _UNPACK_HHQ(data, offset + 7)
        kind, body_channel, length = _UNPACK_HEAD(data, header_end + 1)
        body_end = header_end + 8 + length
        if (
            class_id != 60
            or weight != 0
            or kind != FRAME_BODY
            or body_channel != channel
            or length != body_size
            or length == 0
            or length > self.frame_max
            or body_size > self.max_content_size
            or body_end >= size
            or data[body_end] != FRAME_END
        ):
            return None
        return header_end, body_end

    @property
    def has_buffered_frames(self) -> bool:
        """Whether a complete frame is waiting in the buffer (after a bounded receive_data)."""
        if self._lost_sync or self.state is _CLOSED or self.state is _AWAITING_HEADER:
            # Before the protocol header, the buffer holds a part of it, not a frame: read as
            # one, it would look complete and the node would spin on it until the next byte.
            return False
        buffer, offset = self._buffer, self._offset
        if len(buffer) - offset < 7:
            return False
        length = _UNPACK_I(buffer, offset + 3)[0]
        return len(buffer) - offset >= length + 8 or length > self.frame_max

    @property
    def buffered_bytes(self) -> int:
        return len(self._buffer) - self._offset

    def _bad_header(self, events: list[Event]) -> list[Event]:
        self._lost_sync = True
        self.state = S.CLOSED
        self._buffer = b""
        self._offset = 0
        events.append(BadProtocolHeader())
        return events

    def _fail(self, events: list[Event], error: AMQPError, lost_sync: bool) -> None:
        events.append(ConnectionFailed(error, lost_sync))
        self._assemblies.clear()
        self._lost_sync = self._lost_sync or lost_sync
        self.state = S.CLOSING

    def _handle_frame(self, kind: int, channel: int, payload: bytes, events: list[Event]) -> None:
        state = self.state
        if state is _CLOSING:
            # Our connection.close is out: only the peer's close or close-ok still matter.
            if channel == 0 and kind == FRAME_METHOD and payload[:4] in _CLOSE_IDS:
                try:
                    closing = decode_method(payload)
                except DecodeError:
                    return
                self.state = CHANNEL_ZERO_TRANSITIONS[(S.CLOSING, type(closing))]
                events.append(MethodReceived(0, closing))
            return
        if kind == FRAME_HEARTBEAT:
            if channel != 0:
                self._fail(events, _unexpected_frame(kind, payload), False)
            return
        if kind not in (FRAME_METHOD, FRAME_HEADER, FRAME_BODY):
            self._fail(events, _frame_error(kind, payload, "unknown_frame"), False)
            return
        if channel == 0:
            if kind != FRAME_METHOD:
                if state is not S.CLOSING:
                    self._fail(events, _unexpected_frame(kind, payload), False)
                return
            self._handle_channel_zero(payload, events)
            return
        if state is not _OPEN:
            if state is not _CLOSING:
                self._fail(events, _unexpected_frame(kind, payload), False)
            return
        channel_state = self.channels.get(channel)
        if channel_state is _CHANNEL_CLOSING:
            self._handle_closing_channel(kind, channel, payload, events)
            return
        assembly = self._assemblies.get(channel)
        if assembly is not None:
            self._continue_content(kind, channel, payload, assembly, events)
            return
        if kind != FRAME_METHOD:
            if channel_state is None:
                self._fail(
                    events, AMQPError(ReplyCode.CHANNEL_ERROR, "expected 'channel.open'"), False
                )
            else:
                self._fail(
                    events,
                    AMQPError(
                        ReplyCode.UNEXPECTED_FRAME,
                        "expected method frame, got non method frame instead",
                    ),
                    False,
                )
            return
        method = self._decode(payload, events)
        if method is None:
            return
        if channel_state is None:
            if type(method) is not m.ChannelOpen:
                self._fail(
                    events,
                    AMQPError(ReplyCode.CHANNEL_ERROR, "expected 'channel.open'", method.ids),
                    False,
                )
                return
            if self.channel_max and len(self.channels) >= self.channel_max:
                # RabbitMQ limits how many channels are open, whatever their numbers.
                self._fail(
                    events,
                    AMQPError(
                        ReplyCode.NOT_ALLOWED,
                        f"number of channels opened ({len(self.channels)}) has reached the "
                        f"negotiated channel_max ({self.channel_max})",
                    ),
                    False,
                )
                return
            self.channels[channel] = ChannelState.OPEN
        elif type(method) is m.ChannelOpen:
            self._fail(
                events,
                AMQPError(ReplyCode.CHANNEL_ERROR, "second 'channel.open' seen", method.ids),
                False,
            )
            return
        elif type(method) is m.ChannelCloseOk:
            return  # a close-ok we did not ask for: nothing to do, as RabbitMQ
        elif type(method) is m.ChannelClose:
            # The client's close; the node answers close-ok and forgets the channel.
            del self.channels[channel]
        if method.HAS_CONTENT:
            if type(method) is not m.BasicPublish:
                self._fail(
                    events,
                    AMQPError(
                        ReplyCode.COMMAND_INVALID,
                        f"{method.NAME} is not allowed from a client",
                        method.ids,
                    ),
                    False,
                )
                return
            self._assemblies[channel] = _Assembly(method)
            return
        events.append(MethodReceived(channel, method))

    def _decode(self, payload: bytes, events: list[Event]) -> Method | None:
        try:
            if len(payload) >= 4:
                key = _UNPACK_I(payload, 0)[0]
                if key == _PUBLISH_KEY:
                    return _decode_publish(payload)
                if key == _ACK_KEY and len(payload) == 13:
                    tag, bits = _UNPACK_QB(payload, 4)
                    return m.BasicAck(tag, bool(bits & 1))
            return decode_method(payload)
        except UnknownMethod as exc:
            self._fail(
                events,
                AMQPError(ReplyCode.COMMAND_INVALID, f"unknown method id {exc.ids}"),
                False,
            )
        except (DecodeError, IndexError, struct.error) as exc:
            self._fail(events, _frame_error(FRAME_METHOD, payload, str(exc) or "truncated"), False)
        return None

    def _continue_content(
        self, kind: int, channel: int, payload: bytes, assembly: _Assembly, events: list[Event]
    ) -> None:
        method = assembly.method
        if assembly.header is None:
            if kind != FRAME_HEADER or len(payload) < 14:
                self._fail(
                    events,
                    AMQPError(
                        ReplyCode.UNEXPECTED_FRAME,
                        "expected content header for class 60, got non content header frame "
                        "instead",
                        method.ids,
                    ),
                    False,
                )
                return
            class_id, weight, body_size = _UNPACK_HHQ(payload, 0)
            if class_id != 60 or weight != 0:
                self._fail(
                    events,
                    AMQPError(
                        ReplyCode.UNEXPECTED_FRAME,
                        f"expected content header for class 60, got one for class {class_id} "
                        "instead",
                        method.ids,
                    ),
                    False,
                )
                return
            if body_size > MAX_CONTENT_SIZE:
                self._fail(
                    events,
                    AMQPError(
                        ReplyCode.FRAME_ERROR,
                        f"content body size {body_size} exceeds maximum allowed size "
                        f"{MAX_CONTENT_SIZE}",
                        method.ids,
                    ),
                    False,
                )
                return
            if body_size > self.max_content_size:
                # Refuse before buffering the body: the channel closes and its body frames are
                # dropped.
                del self._assemblies[channel]
                self.channels[channel] = ChannelState.CLOSING
                events.append(
                    ChannelFailed(
                        channel,
                        AMQPError(
                            ReplyCode.PRECONDITION_FAILED,
                            f"message size {body_size} is larger than configured max size "
                            f"{self.max_content_size}",
                            method.ids,
                        ),
                    )
                )
                return
            if body_size == 0:
                del self._assemblies[channel]
                events.append(ContentReceived(channel, method, payload, b""))
                return
            assembly.header = payload
            assembly.remaining = body_size
            return
        if kind != FRAME_BODY:
            self._fail(
                events,
                AMQPError(
                    ReplyCode.UNEXPECTED_FRAME,
                    "expected content body, got non content body frame instead",
                    method.ids,
                ),
                False,
            )
            return
        remaining = assembly.remaining - len(payload)
        if remaining < 0:
            self._fail(
                events,
                AMQPError(
                    ReplyCode.FRAME_ERROR,
                    "content body frame exceeds remaining content size",
                    method.ids,
                ),
                False,
            )
            return
        if remaining == 0:
            del self._assemblies[channel]
            parts = assembly.parts
            body = payload if not parts else b"".join(parts) + payload
            events.append(ContentReceived(channel, method, assembly.header, body))
            return
        assembly.parts.append(payload)
        assembly.remaining = remaining

    def _handle_closing_channel(
        self, kind: int, channel: int, payload: bytes, events: list[Event]
    ) -> None:
        """While our channel.close is unanswered, everything but close and close-ok is dropped."""
        if kind != FRAME_METHOD or len(payload) < 4:
            return
        key = _UNPACK_I(payload, 0)[0]
        if key == (20 << 16) | 41:
            del self.channels[channel]
            self._assemblies.pop(channel, None)
        elif key == (20 << 16) | 40:
            events.append(MethodReceived(channel, m.ChannelClose()))

    def _handle_channel_zero(self, payload: bytes, events: list[Event]) -> None:
        method = self._decode(payload, events)
        if method is None:
            return
        state = self.state
        next_state = CHANNEL_ZERO_TRANSITIONS.get((state, type(method)))
        if next_state is None:
            if state is S.CLOSING:
                return  # everything but close / close-ok is ignored while closing
            self._fail(
                events,
                AMQPError(
                    ReplyCode.CHANNEL_ERROR,
                    "unexpected method in connection state "
                    f"{_STATE_NAMES.get(state, state.name.lower())}",
                    method.ids,
                ),
                False,
            )
            return
        if type(method) is m.ConnectionTuneOk:
            error = _check_tune_ok(method)  # type: ignore[arg-type]
            if error is not None:
                self._fail(events, error, False)
                return
            self.frame_max = method.frame_max or 131072  # type: ignore[attr-defined]
            self.channel_max = method.channel_max  # type: ignore[attr-defined]
            self.heartbeat = method.heartbeat  # type: ignore[attr-defined]
        self.state = next_state
        events.append(MethodReceived(0, method))

    # --- output ---------------------------------------------------------------------------

    def close_channel(self, channel: int, error: AMQPError) -> bytes:
        """channel.close for a soft error; the channel drops input until close-ok."""
        self.channels[channel] = ChannelState.CLOSING
        self._assemblies.pop(channel, None)
        class_id, method_id = error.method
        return method_frame(
            channel, m.ChannelClose(int(error.code), error.reply_text, class_id, method_id)
        )

    def close_connection(self, error: AMQPError) -> bytes:
        """connection.close for a hard error, or a node-initiated close (320)."""
        self.state = S.CLOSING
        self._assemblies.clear()
        class_id, method_id = error.method
        return method_frame(
            0, m.ConnectionClose(int(error.code), error.reply_text, class_id, method_id)
        )

    @property
    def is_open(self) -> bool:
        return self.state is S.OPEN


SERVER_FRAME_MAX = 131072
SERVER_CHANNEL_MAX = 2047


def _check_tune_ok(tune_ok: m.ConnectionTuneOk) -> AMQPError | None:
    """RabbitMQ's checks of the client's negotiated values."""
    for field, minimum, maximum, value in (
        ("frame_max", FRAME_MIN_SIZE, SERVER_FRAME_MAX, tune_ok.frame_max),
        ("channel_max", 1, SERVER_CHANNEL_MAX, tune_ok.channel_max),
    ):
        if value != 0 and value < minimum:
            return AMQPError(
                ReplyCode.NOT_ALLOWED,
                f"negotiated {field} = {value} is lower than the minimum allowed value ({minimum})",
                (10, 31),
            )
        if value == 0 or value > maximum:
            return AMQPError(
                ReplyCode.NOT_ALLOWED,
                f"negotiated {field} = {value} is higher than the maximum allowed value "
                f"({maximum})",
                (10, 31),
            )
    return None


def _decode_publish(payload: bytes) -> m.BasicPublish:
    """Hand-tuned decode of basic.publish: it is the most frequent method."""
    if payload[6]:
        exchange, offset = decode_shortstr(payload, 6)
    else:  # the default exchange: most publishes of work queues
        exchange, offset = "", 7
    routing_key, offset = decode_shortstr(payload, offset)
    bits = payload[offset]
    return m.BasicPublish(0, exchange, routing_key, bool(bits & 1), bool(bits & 2))
