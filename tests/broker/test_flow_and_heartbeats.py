"""Heartbeats, resource alarms, tune negotiation, channel_max and login, through real clients.

Login covers PLAIN and AMQPLAIN, failures with and without authentication_failure_close, and guest
from a non-loopback address. Tests over raw sockets and pika run against a Leveret node and, with
LEVERET_REFERENCE=rabbitmq, against a real RabbitMQ too. The alarm tests need the node's broker and
run on Leveret only; what they expect was observed on RabbitMQ 3.10.8 with `rabbitmqctl
set_vm_memory_high_watermark 0` and `set_disk_free_limit`: a connection hears connection.blocked
only once it publishes, what it publishes then is held until the alarm clears, and one that does
not publish keeps working.
"""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import amqp
import amqp.exceptions
import pika
import pika.exceptions
import pytest

from leveret.amqp import methods as m
from leveret.amqp.constants import PROTOCOL_HEADER
from leveret.amqp.frames import HEARTBEAT_FRAME, method_frame
from tests.support.node import InProcessNode, wait_for
from tests.support.raw_client import RawClient
from tests.support.reference import Target

REFUSED = (
    "ACCESS_REFUSED - Login was refused using authentication mechanism {}. "
    "For details see the broker logfile."
)

# --- the broker under test ------------------------------------------------------------------------


# --- raw connections ------------------------------------------------------------------------------


def _start(
    port: int,
    *,
    capabilities: dict[str, Any] | None = None,
    mechanism: str = "PLAIN",
    response: bytes = b"\x00guest\x00guest",
    timeout: float = 5.0,
) -> RawClient:
    """Protocol header and start-ok; the caller reads what follows (tune, or the refusal)."""
    raw = RawClient(port, timeout=timeout)
    raw.send(PROTOCOL_HEADER)
    start = raw.read_method()
    assert start is not None and isinstance(start[1], m.ConnectionStart)
    raw.send(
        method_frame(
            0,
            m.ConnectionStartOk({"capabilities": capabilities or {}}, mechanism, response, "en_US"),
        )
    )
    return raw


def _open(
    port: int,
    *,
    heartbeat: int = 0,
    channel_max: int = 2047,
    frame_max: int = 131072,
    capabilities: dict[str, Any] | None = None,
    timeout: float = 5.0,
) -> RawClient:
    raw = _start(port, capabilities=capabilities, timeout=timeout)
    tune = raw.read_method()
    assert tune is not None and isinstance(tune[1], m.ConnectionTune)
    assert (tune[1].channel_max, tune[1].frame_max, tune[1].heartbeat) == (2047, 131072, 60)
    raw.send(method_frame(0, m.ConnectionTuneOk(channel_max, frame_max, heartbeat)))
    raw.send(method_frame(0, m.ConnectionOpen("/")))
    opened = raw.read_method()
    assert opened is not None and isinstance(opened[1], m.ConnectionOpenOk)
    return raw


@dataclass
class Ending:
    """What a raw client saw until the node closed the socket."""

    methods: list[m.Method] = field(default_factory=list)
    heartbeats: int = 0
    closed: bool = False  # False: the read timed out with the socket still open
    elapsed: float = 0.0


def _read_until_closed(raw: RawClient) -> Ending:
    ending = Ending()
    started = time.monotonic()
    try:
        for _ in range(10_000):
            frame = raw.read_frame()
            if frame is None:
                ending.closed = True
                break
            kind, _channel, payload = frame
            if kind == 8:
                ending.heartbeats += 1
            elif kind == 1:
                ending.methods.append(m.decode_method(payload))
    except ConnectionResetError:
        ending.closed = True
    except TimeoutError:
        pass
    ending.elapsed = time.monotonic() - started
    return ending


def _round_trip(raw: RawClient, channel: int = 1) -> None:
    """Open a channel and wait for open-ok (skipping heartbeats): proof the connection is alive."""
    raw.send(method_frame(channel, m.ChannelOpen()))
    for _ in range(100):
        result = raw.read_method()
        assert result is not None, "the node closed the connection"
        if isinstance(result[1], m.ChannelOpenOk):
            return
        assert not isinstance(result[1], m.ConnectionClose), result[1]
    raise AssertionError("no channel.open-ok")


def _methods_until(raw: RawClient, kind: type[m.Method]) -> list[m.Method]:
    """Every method received up to and including the first of `kind`, skipping heartbeats."""
    seen: list[m.Method] = []
    for _ in range(100):
        result = raw.read_method()
        assert result is not None, f"socket closed before {kind.__name__}"
        seen.append(result[1])
        if isinstance(result[1], kind):
            return seen
    raise AssertionError(f"no {kind.__name__} among {seen}")


def _publish_frames(channel: int, routing_key: str, body: bytes) -> bytes:
    return (
        method_frame(channel, m.BasicPublish(routing_key=routing_key))
        + struct.pack(">BHI", 2, channel, 14)
        + struct.pack(">HHQH", 60, 0, len(body), 0)
        + b"\xce"
        + struct.pack(">BHI", 3, channel, len(body))
        + body
        + b"\xce"
    )


# --- heartbeats -----------------------------------------------------------------------------------


def test_silent_client_is_dropped_after_missed_heartbeats(target: Target) -> None:
    raw = _open(target.port, heartbeat=1, timeout=10.0)
    try:
        ending = _read_until_closed(raw)
    finally:
        raw.close()
    assert ending.closed, "a client silent for 10 heartbeat intervals must be dropped"
    assert ending.elapsed >= 1.0, "dropped before a single interval had passed"
    assert ending.heartbeats >= 1, "the node sends heartbeats meanwhile"
    assert ending.methods == [], "a heartbeat timeout closes the socket without connection.close"


def test_client_that_sends_heartbeats_is_kept(target: Target) -> None:
    raw = _open(target.port, heartbeat=1, timeout=0.2)
    received = 0
    try:
        last_sent = time.monotonic()
        deadline = last_sent + 3.5  # more than three intervals
        while time.monotonic() < deadline:
            try:
                frame = raw.read_frame()
            except TimeoutError:
                frame = (0, 0, b"")
            assert frame is not None, "the node dropped a client that sent heartbeats"
            received += frame[0] == 8
            if time.monotonic() - last_sent >= 0.4:
                raw.send(HEARTBEAT_FRAME)
                last_sent = time.monotonic()
        raw.sock.settimeout(5.0)
        _round_trip(raw)
    finally:
        raw.close()
    assert received >= 2, (
        "the node sends a heartbeat at least every interval when it has nothing else to say"
    )


# A consumer that stops reading: 26 MB waiting for it, more than socket buffers and the node's
# output buffer hold together.
BACKLOG_MESSAGES = 400
BACKLOG_BODY = b"x" * 65536


def _stalled_consumer(target: Target, queue: str, heartbeat: int) -> tuple[RawClient, Any]:
    """Fill a queue, then consume it no-ack from a raw client that never reads or sends again.

    Returns the raw client and a pika channel (on another connection) to watch the queue with."""
    watcher = pika.BlockingConnection(pika.URLParameters(target.url))
    ch = watcher.channel()
    ch.queue_declare(queue)
    ch.confirm_delivery()
    for _ in range(BACKLOG_MESSAGES):
        ch.basic_publish("", queue, BACKLOG_BODY)
    raw = _open(target.port, heartbeat=heartbeat)
    _round_trip(raw)
    raw.send(method_frame(1, m.BasicConsume(queue=queue, consumer_tag="stalled", no_ack=True)))
    wait_for(lambda: ch.queue_declare(queue, passive=True).method.consumer_count == 1)
    return raw, ch


def test_client_that_stops_reading_and_sending_is_dropped(
    request: pytest.FixtureRequest, target: Target
) -> None:
    queue = f"stalled-{target.name}-hb"
    raw, ch = _stalled_consumer(target, queue, heartbeat=1)
    try:
        wait_for(lambda: ch.queue_declare(queue, passive=True).method.consumer_count == 0, 6.0)
    finally:
        raw.close()
        ch.queue_delete(queue)
        ch.connection.close()


def test_no_ack_consumer_that_does_not_read_gets_a_bounded_backlog(
    request: pytest.FixtureRequest, target: Target
) -> None:
    queue = f"stalled-{target.name}-backlog"
    raw, ch = _stalled_consumer(target, queue, heartbeat=0)
    try:
        # Whatever the node pushed out, a good part of the 26 MB is still waiting in the queue.
        assert ch.queue_declare(queue, passive=True).method.message_count > BACKLOG_MESSAGES // 4
    finally:
        raw.close()
        ch.queue_delete(queue)
        ch.connection.close()


def test_pika_with_short_heartbeat_stays_connected(target: Target) -> None:
    params = pika.URLParameters(target.url + "?heartbeat=1")
    conn = pika.BlockingConnection(params)
    try:
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline:
            conn.process_data_events(time_limit=0.2)
        assert conn.is_open
        conn.channel().queue_declare("", exclusive=True)
    finally:
        if conn.is_open:
            conn.close()


# --- resource alarms (Leveret only: the test raises the alarm through the node) -------------------


@dataclass
class Watched:
    """A pika connection whose connection.blocked / unblocked notifications are recorded."""

    conn: pika.BlockingConnection
    events: list[tuple[str, str]] = field(default_factory=list)

    @classmethod
    def open(cls, url: str) -> Watched:
        watched = cls(pika.BlockingConnection(pika.URLParameters(url)))
        watched.conn.add_on_connection_blocked_callback(
            lambda _conn, frame: watched.events.append(("blocked", frame.method.reason))
        )
        watched.conn.add_on_connection_unblocked_callback(
            lambda _conn, _frame: watched.events.append(("unblocked", ""))
        )
        return watched

    def wait_events(self, count: int) -> list[tuple[str, str]]:
        def arrived() -> bool:
            self.conn.process_data_events(time_limit=0.02)
            return len(self.events) >= count

        wait_for(arrived)
        return self.events

    def close(self) -> None:
        if self.conn.is_open:
            self.conn.close()


@pytest.fixture
def watched(node: InProcessNode) -> Iterator[Watched]:
    connection = Watched.open(node.url)
    yield connection
    connection.close()


def _alarm(node: InProcessNode, resource: str, active: bool) -> None:
    node.call(lambda: node.broker.set_alarm(resource, active))


def _ready(node: InProcessNode, queue: str) -> int:
    conn = pika.BlockingConnection(pika.URLParameters(node.url))
    try:
        return conn.channel().queue_declare(queue, passive=True).method.message_count
    finally:
        conn.close()


def test_blocked_publisher_resumes_when_the_alarm_clears(
    node: InProcessNode, watched: Watched
) -> None:
    ch = watched.conn.channel()
    ch.queue_declare("alarmed")
    _alarm(node, "memory", True)
    ch.basic_publish("", "alarmed", b"during")
    assert watched.wait_events(1)[0] == ("blocked", "low on memory")
    _alarm(node, "memory", False)
    assert watched.wait_events(2)[1] == ("unblocked", "")
    ch.confirm_delivery()
    ch.basic_publish("", "alarmed", b"after")  # confirmed: publishing works again
    wait_for(lambda: _ready(node, "alarmed") == 2)
    got = [ch.basic_get("alarmed", auto_ack=True)[2] for _ in range(2)]
    assert got == [b"during", b"after"]


def test_connections_that_do_not_publish_keep_working_during_an_alarm(node: InProcessNode) -> None:
    conn = pika.BlockingConnection(pika.URLParameters(node.url))
    try:
        ch = conn.channel()
        ch.queue_declare("work")
        ch.basic_publish("", "work", b"before")
        ch.basic_publish("", "work", b"before-2")
        # The node has read both publishes before the alarm: one it read during the alarm would
        # block this connection, rightly (as RabbitMQ does).
        assert ch.queue_declare("work", passive=True).method.message_count == 2
        _alarm(node, "memory", True)
        method, _props, body = ch.basic_get("work")
        assert body == b"before"
        ch.basic_ack(method.delivery_tag)
        consumed: list[bytes] = []

        def on_message(channel: Any, method: Any, _props: Any, body: bytes) -> None:
            consumed.append(body)
            channel.basic_ack(method.delivery_tag)

        def arrived() -> bool:
            conn.process_data_events(time_limit=0.02)
            return bool(consumed)

        ch.basic_consume("work", on_message)
        wait_for(arrived)
        assert consumed == [b"before-2"]
        assert ch.queue_declare("work", passive=True).method.message_count == 0
        other = pika.BlockingConnection(
            pika.URLParameters(node.url)
        )  # new connections are accepted
        other.channel().queue_declare("work", passive=True)
        other.close()
    finally:
        _alarm(node, "memory", False)
        conn.close()


def test_no_blocked_notification_before_a_connection_publishes(node: InProcessNode) -> None:
    capabilities = {"connection.blocked": True}
    early = _open(node.port, capabilities=capabilities)
    try:
        _alarm(node, "memory", True)
        late = _open(node.port, capabilities=capabilities)
        try:
            for raw in (early, late):
                raw.send(method_frame(1, m.ChannelOpen()))  # a round trip
                assert [type(method) for method in _methods_until(raw, m.ChannelOpenOk)] == [
                    m.ChannelOpenOk
                ]
        finally:
            late.close()
    finally:
        _alarm(node, "memory", False)
        early.close()


def test_publish_during_an_alarm_waits_for_it_to_clear(
    node: InProcessNode, watched: Watched
) -> None:
    ch = watched.conn.channel()
    ch.queue_declare("held")
    _alarm(node, "memory", True)
    try:
        ch.basic_publish("", "held", b"held back")
        published_at = len(watched.events)
        assert watched.wait_events(published_at + 1)[published_at] == ("blocked", "low on memory")
        assert _ready(node, "held") == 0
    finally:
        _alarm(node, "memory", False)
    wait_for(lambda: _ready(node, "held") == 1)


def test_blocked_reason_names_every_alarm(node: InProcessNode) -> None:
    _alarm(node, "memory", True)
    _alarm(node, "disk", True)
    raw = _open(node.port, capabilities={"connection.blocked": True})
    try:
        raw.send(method_frame(1, m.ChannelOpen()) + _publish_frames(1, "nowhere", b"x"))
        blocked = _methods_until(raw, m.ConnectionBlocked)[-1]
        assert blocked == m.ConnectionBlocked("low on disk & memory")
    finally:
        _alarm(node, "memory", False)
        _alarm(node, "disk", False)
        raw.close()


def test_blocked_connection_is_not_dropped_for_missed_heartbeats(node: InProcessNode) -> None:
    raw = _open(node.port, heartbeat=1, capabilities={"connection.blocked": True}, timeout=0.2)
    try:
        _round_trip(raw)
        raw.send(method_frame(1, m.QueueDeclare(queue="blocked-hb")))
        _alarm(node, "memory", True)
        raw.send(_publish_frames(1, "blocked-hb", b"x"))
        # Silent for three intervals while blocked: the node must not count that against us.
        deadline = time.monotonic() + 3.5
        seen: list[m.Method] = []
        while time.monotonic() < deadline:
            try:
                frame = raw.read_frame()
            except TimeoutError:
                continue
            assert frame is not None, (
                "a blocked client was dropped for heartbeats it could not send"
            )
            if frame[0] == 1:
                seen.append(m.decode_method(frame[2]))
        assert any(isinstance(method, m.ConnectionBlocked) for method in seen)
        _alarm(node, "memory", False)
        raw.sock.settimeout(5.0)
        _round_trip(raw, channel=2)
    finally:
        _alarm(node, "memory", False)
        raw.close()
    wait_for(lambda: _ready(node, "blocked-hb") == 1)


# --- tune negotiation and channel_max -------------------------------------------------------------


@pytest.mark.parametrize(
    ("channel_max", "frame_max"),
    [(2047, 4095), (2047, 0), (2047, 131073), (0, 131072), (2048, 131072), (65535, 131072)],
    ids=[
        "frame_max-below-4096",
        "frame_max-0",
        "frame_max-above",
        "channel_max-0",
        "channel_max-2048",
        "channel_max-65535",
    ],
)
def test_tune_ok_out_of_range_ends_the_handshake_silently(
    request: pytest.FixtureRequest, target: Target, channel_max: int, frame_max: int
) -> None:
    raw = _start(target.port, timeout=8.0)
    try:
        tune = raw.read_method()
        assert tune is not None and isinstance(tune[1], m.ConnectionTune)
        raw.send(method_frame(0, m.ConnectionTuneOk(channel_max, frame_max, 0)))
        ending = _read_until_closed(raw)
    finally:
        raw.close()
    assert ending.closed
    assert ending.methods == []


def test_smallest_tune_values_are_accepted_and_frame_max_is_honoured(target: Target) -> None:
    raw = _open(target.port, channel_max=1, frame_max=4096)
    try:
        _round_trip(raw)
        raw.send(method_frame(1, m.QueueDeclare(queue="", exclusive=True)))
        declared = raw.read_method()
        assert declared is not None and isinstance(declared[1], m.QueueDeclareOk)
        queue = declared[1].queue
        body = bytes(range(256)) * 40  # 10240 bytes: three body frames at frame_max 4096
        chunk = 4096 - 8
        frames = method_frame(1, m.BasicPublish(routing_key=queue))
        frames += (
            struct.pack(">BHI", 2, 1, 14) + struct.pack(">HHQH", 60, 0, len(body), 0) + b"\xce"
        )
        for start in range(0, len(body), chunk):
            piece = body[start : start + chunk]
            frames += struct.pack(">BHI", 3, 1, len(piece)) + piece + b"\xce"
        raw.send(frames + method_frame(1, m.BasicGet(queue=queue, no_ack=True)))
        for _ in range(10):
            frame = raw.read_frame()
            assert frame is not None
            if frame[0] == 1 and isinstance(m.decode_method(frame[2]), m.BasicGetOk):
                break
        sizes: list[int] = []
        while sum(sizes) < len(body):
            frame = raw.read_frame()
            assert frame is not None
            if frame[0] == 3:
                sizes.append(len(frame[2]))
        assert sizes == [chunk, chunk, len(body) - 2 * chunk]
        # A frame above the negotiated frame_max is a hard error.
        raw.send(struct.pack(">BHI", 3, 1, 5000) + b"x" * 5000 + b"\xce")
        ending = _read_until_closed(raw)
        assert [type(method) for method in ending.methods] == [m.ConnectionClose]
        close = ending.methods[0]
        assert close.reply_code == 501  # type: ignore[attr-defined]
    finally:
        raw.close()


def test_channel_max_limits_how_many_channels_are_open(
    request: pytest.FixtureRequest, target: Target
) -> None:
    raw = _open(target.port, channel_max=1)
    try:
        _round_trip(raw, channel=7)
        raw.send(method_frame(7, m.ChannelClose(200, "bye", 0, 0)))
        closed = raw.read_method()
        assert closed is not None and isinstance(closed[1], m.ChannelCloseOk)
        _round_trip(raw, channel=9)  # one open channel again, whatever its number
        raw.send(method_frame(10, m.ChannelOpen()))
        seen = _methods_until(raw, m.ConnectionClose)
    finally:
        raw.close()
    assert len(seen) == 1
    close = seen[0]
    assert isinstance(close, m.ConnectionClose)
    assert (close.reply_code, close.reply_text, close.class_id, close.method_id) == (
        530,
        "NOT_ALLOWED - number of channels opened (1) has reached the negotiated channel_max (1)",
        0,
        0,
    )


def test_channel_numbers_above_channel_max_are_allowed(
    request: pytest.FixtureRequest, target: Target
) -> None:
    raw = _open(target.port, channel_max=2047)
    try:
        _round_trip(raw, channel=2048)
        _round_trip(raw, channel=65535)
    finally:
        raw.close()


# --- login ----------------------------------------------------------------------------------------


def test_wrong_password_with_authentication_failure_close(target: Target) -> None:
    url = target.url.replace("guest:guest", "guest:wrong")
    with pytest.raises(pika.exceptions.ProbableAuthenticationError) as caught:
        pika.BlockingConnection(pika.URLParameters(url))
    assert caught.value.args == (f"ConnectionClosedByBroker: (403) '{REFUSED.format('PLAIN')}'",)
    conn = pika.BlockingConnection(pika.URLParameters(target.url))
    conn.close()


@pytest.mark.parametrize("user", ["guest", "nobody"])
def test_wrong_credentials_close_with_403_when_the_client_asks(target: Target, user: str) -> None:
    raw = _start(
        target.port,
        capabilities={"authentication_failure_close": True},
        response=f"\x00{user}\x00wrong".encode(),
        timeout=8.0,
    )
    try:
        ending = _read_until_closed(raw)
    finally:
        raw.close()
    assert ending.closed
    assert len(ending.methods) == 1
    close = ending.methods[0]
    assert isinstance(close, m.ConnectionClose)
    assert (close.reply_code, close.reply_text) == (403, REFUSED.format("PLAIN"))


def test_wrong_credentials_close_silently_without_the_capability(target: Target) -> None:
    raw = _start(target.port, response=b"\x00guest\x00wrong", timeout=8.0)
    try:
        ending = _read_until_closed(raw)
    finally:
        raw.close()
    assert ending.closed
    assert ending.methods == []


@pytest.mark.parametrize(
    ("mechanism", "response"),
    [("NO-SUCH-MECHANISM", b"\x00guest\x00guest"), ("PLAIN", b"not a plain response")],
    ids=["unknown-mechanism", "malformed-plain"],
)
def test_broken_login_ends_the_handshake_silently(
    request: pytest.FixtureRequest, target: Target, mechanism: str, response: bytes
) -> None:
    raw = _start(
        target.port,
        capabilities={"authentication_failure_close": True},
        mechanism=mechanism,
        response=response,
        timeout=8.0,
    )
    try:
        ending = _read_until_closed(raw)
    finally:
        raw.close()
    assert ending.closed
    assert ending.methods == []


def test_amqplain_login(target: Target) -> None:
    host = f"127.0.0.1:{target.port}"
    conn = amqp.Connection(host=host, userid="guest", password="guest", login_method="AMQPLAIN")
    conn.connect()
    try:
        channel = conn.channel()
        queue = channel.queue_declare("", exclusive=True).queue
        channel.basic_publish(amqp.Message(b"over amqplain"), routing_key=queue)
        assert channel.basic_get(queue, no_ack=True).body == b"over amqplain"
    finally:
        conn.close()
    refused = amqp.Connection(host=host, userid="guest", password="wrong", login_method="AMQPLAIN")
    with pytest.raises(amqp.exceptions.AccessRefused) as caught:
        refused.connect()
    assert caught.value.reply_text == REFUSED.format("AMQPLAIN")


def _non_loopback_address() -> str | None:
    """An IPv4 address of this machine that is not loopback, or None."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("192.0.2.1", 9))  # no packet is sent: this only picks the outgoing interface
        address = probe.getsockname()[0]
    except OSError:
        return None
    finally:
        probe.close()
    return None if address.startswith("127.") or address == "0.0.0.0" else address


def test_guest_is_refused_from_a_non_loopback_address() -> None:
    address = _non_loopback_address()
    if address is None:
        pytest.skip("this machine has no non-loopback IPv4 address to connect from")
    node = InProcessNode(bind=address)
    try:
        node.add_user("alice", "secret")
        with pytest.raises(pika.exceptions.ProbableAuthenticationError) as caught:
            pika.BlockingConnection(
                pika.URLParameters(f"amqp://guest:guest@{address}:{node.port}/")
            )
        assert caught.value.args == (
            f"ConnectionClosedByBroker: (403) '{REFUSED.format('PLAIN')}'",
        )
        # Other users may connect from there.
        conn = pika.BlockingConnection(
            pika.URLParameters(f"amqp://alice:secret@{address}:{node.port}/")
        )
        conn.channel().queue_declare("", exclusive=True)
        conn.close()
    finally:
        node.stop()


def test_alarm_listeners_hear_every_change_of_the_nodes_alarms(node: InProcessNode) -> None:
    """The clustering plugin sends the node's report to the others on each call: a second
    resource in alarm (disk after memory) must reach them too, not only the first."""
    heard: list[bool] = []
    node.call(lambda: node.broker.alarm_listeners.append(heard.append))
    try:
        for resource, active in [
            ("memory", True),
            ("memory", True),  # no change
            ("disk", True),
            ("memory", False),
            ("disk", False),
            ("disk", False),  # no change
        ]:
            _alarm(node, resource, active)
        assert heard == [True, True, True, False]
    finally:
        node.call(lambda: node.broker.alarm_listeners.remove(heard.append))
