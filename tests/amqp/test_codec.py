"""Property tests of the sans-IO codec: round trips, and arbitrary bytes never crash the parser."""

from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from leveret.amqp import methods as m
from leveret.amqp.connection import (
    BadProtocolHeader,
    ChannelFailed,
    ConnectionFailed,
    ContentReceived,
    MethodReceived,
    S,
    ServerConnection,
)
from leveret.amqp.constants import PROTOCOL_HEADER
from leveret.amqp.fields import decode_table, decode_value, encode_table, encode_value
from leveret.amqp.frames import (
    content_frames,
    deliver_framed,
    deliver_frames,
    framed_content,
    method_frame,
    shortstr,
)
from leveret.amqp.properties import BasicProperties, decode_properties, encode_header_payload
from leveret.erlang_terms import field_type_name

field_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.text(max_size=20)
    | st.binary(max_size=20)
    | st.floats(allow_nan=False),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)
tables = st.dictionaries(
    st.text(max_size=20).filter(lambda k: len(k.encode()) < 256), field_values, max_size=6
)


@given(tables)
def test_table_round_trip(table) -> None:
    encoded = encode_table(table)
    decoded, end = decode_table(encoded, 0)
    assert end == len(encoded)
    assert decoded == table


# Each wire type letter with a packer and the values it holds.
_WIRE_NUMBERS = {
    b"b": (">b", st.integers(-(2**7), 2**7 - 1)),
    b"B": (">B", st.integers(0, 2**8 - 1)),
    b"s": (">h", st.integers(-(2**15), 2**15 - 1)),
    b"u": (">H", st.integers(0, 2**16 - 1)),
    b"I": (">i", st.integers(-(2**31), 2**31 - 1)),
    b"i": (">I", st.integers(0, 2**32 - 1)),
    b"l": (">q", st.integers(-(2**63), 2**63 - 1)),
    b"f": (">f", st.floats(width=32, allow_nan=False)),
    b"d": (">d", st.floats(allow_nan=False)),
}
wire_numbers = st.one_of(
    *(
        values.map(lambda value, letter=letter, fmt=fmt: letter + struct.pack(fmt, value))
        for letter, (fmt, values) in _WIRE_NUMBERS.items()
    )
)
# Long strings ('S', UTF-8 or not, as RabbitMQ's are binaries) and byte arrays ('x').
wire_strings = st.tuples(st.sampled_from([b"S", b"x"]), st.binary(max_size=12)).map(
    lambda pair: pair[0] + struct.pack(">I", len(pair[1])) + pair[1]
)


def _wire_table(entries: list[tuple[str, bytes]]) -> bytes:
    inner = b"".join(bytes([len(key.encode())]) + key.encode() + value for key, value in entries)
    return struct.pack(">I", len(inner)) + inner


@given(
    st.lists(
        st.tuples(st.text(max_size=10), st.one_of(wire_numbers, wire_strings)),
        max_size=8,
        unique_by=lambda e: e[0],
    )
)
def test_values_go_back_out_with_the_type_they_came_with(entries) -> None:
    """A rewritten header (dead-lettering, BCC, direct reply-to) keeps each number's width,
    signedness and precision, and a long string that is not UTF-8 stays a long string, as
    RabbitMQ keeps them."""
    wire = _wire_table(entries)
    decoded, _ = decode_table(wire, 0)
    assert encode_table(decoded) == wire
    array = (
        b"A" + struct.pack(">I", sum(len(v) for _, v in entries)) + b"".join(v for _, v in entries)
    )
    assert encode_value(decode_value(array, 0)[0]) == array


def test_a_long_string_that_is_not_utf8_goes_back_out_as_a_long_string() -> None:
    decoded, _ = decode_value(b"S" + struct.pack(">I", 2) + b"\xff\xfe", 0)
    assert decoded == b"\xff\xfe"
    assert encode_value(decoded) == b"S" + struct.pack(">I", 2) + b"\xff\xfe"
    assert field_type_name(decoded) == "longstr"


def test_an_unsigned_long_goes_back_out_as_a_long() -> None:
    """RabbitMQ reads 'L' as a signed long and writes it back as 'l'."""
    decoded, _ = decode_value(b"L" + struct.pack(">q", -2), 0)
    assert encode_value(decoded) == b"l" + struct.pack(">q", -2)
    assert field_type_name(decoded) == "long"


shortstrs = st.text(max_size=30).filter(lambda s: len(s.encode()) < 256)


@given(shortstrs, shortstrs, st.booleans(), st.booleans(), st.booleans(), tables)
def test_queue_declare_round_trip(name, _unused, durable, exclusive, no_wait, arguments) -> None:
    method = m.QueueDeclare(
        queue=name, durable=durable, exclusive=exclusive, no_wait=no_wait, arguments=arguments
    )
    assert m.decode_method(method.encode()) == method


@given(
    st.builds(
        BasicProperties,
        content_type=st.none() | shortstrs,
        headers=st.none() | tables,
        delivery_mode=st.none() | st.sampled_from([1, 2]),
        priority=st.none() | st.integers(0, 255),
        expiration=st.none() | st.sampled_from(["1000", "0"]),
        timestamp=st.none() | st.integers(0, 2**40),
        user_id=st.none() | shortstrs,
    )
)
def test_properties_round_trip(props) -> None:
    payload = encode_header_payload(60, 5, props.encode())
    assert decode_properties(payload) == props


def _open_connection() -> ServerConnection:
    conn = ServerConnection()
    conn.receive_data(PROTOCOL_HEADER)
    conn.receive_data(method_frame(0, m.ConnectionStartOk(response=b"\x00guest\x00guest")))
    conn.receive_data(method_frame(0, m.ConnectionTuneOk(2047, 131072, 60)))
    conn.receive_data(method_frame(0, m.ConnectionOpen("/")))
    conn.receive_data(method_frame(1, m.ChannelOpen()))
    assert conn.state is S.OPEN
    return conn


def test_publish_assembled_across_split_reads() -> None:
    conn = _open_connection()
    body = b"x" * 300000
    header = encode_header_payload(60, len(body), BasicProperties(delivery_mode=2).encode())
    data = content_frames(
        1, m.BasicPublish(exchange="ex", routing_key="rk").encode(), header, body, 131072
    )
    events = []
    for start in range(0, len(data), 7777):
        events += conn.receive_data(data[start : start + 7777])
    assert len(events) == 1
    event = events[0]
    assert isinstance(event, ContentReceived)
    assert event.method == m.BasicPublish(exchange="ex", routing_key="rk")
    assert event.body == body


@settings(max_examples=300)
@given(st.binary(max_size=2000))
def test_random_bytes_after_handshake_never_crash(data) -> None:
    conn = _open_connection()
    events = conn.receive_data(data)
    # The handshake is over: no protocol-header events, only frames' outcomes.
    for event in events:
        assert isinstance(event, (MethodReceived, ContentReceived, ChannelFailed, ConnectionFailed))
    failures = [i for i, event in enumerate(events) if isinstance(event, ConnectionFailed)]
    assert len(failures) <= 1
    if failures:
        # Once our connection.close is decided, only the peer's close or close-ok is heard.
        for event in events[failures[0] + 1 :]:
            assert isinstance(event, MethodReceived) and event.channel == 0
            assert isinstance(event.method, (m.ConnectionClose, m.ConnectionCloseOk))
    # memory stays bounded: the parser never holds more than one frame's worth plus a header
    assert conn.buffered_bytes <= conn.frame_max + 8


@settings(max_examples=300)
@given(st.binary(max_size=64))
def test_random_protocol_header(data) -> None:
    conn = ServerConnection()
    events = conn.receive_data(data)
    if data[:8] != PROTOCOL_HEADER[: len(data[:8])]:
        assert any(isinstance(e, BadProtocolHeader) for e in events)


@settings(max_examples=200)
@given(st.integers(131073, 2**32 - 1))
def test_oversized_frame_is_a_frame_error(size) -> None:
    conn = _open_connection()
    events = conn.receive_data(struct.pack(">BHI", 1, 1, size))
    assert len(events) == 1 and isinstance(events[0], ConnectionFailed)
    assert events[0].error.code == 501 and events[0].lost_sync
    assert conn.receive_data(b"more") == []


@settings(max_examples=200)
@given(st.lists(st.binary(min_size=1, max_size=300), min_size=1, max_size=20))
def test_truncated_valid_stream_is_buffered_not_failed(chunks) -> None:
    """A valid stream cut at any point yields the same events as the whole stream."""
    conn_whole = _open_connection()
    stream = b"".join(method_frame(1, m.QueueDeclare(queue=c[:50].hex()[:100])) for c in chunks)
    whole = conn_whole.receive_data(stream)
    conn_split = _open_connection()
    split = []
    for i in range(0, len(stream), 13):
        split += conn_split.receive_data(stream[i : i + 13])
    assert split == whole


def test_channel_max_bounds_how_many_channels_are_open_not_their_numbers() -> None:
    """As RabbitMQ 3.10: with channel_max 2047 negotiated, channel 2048 may be opened."""
    conn = _open_connection()
    events = conn.receive_data(method_frame(2048, m.ChannelOpen()))
    assert [type(event) for event in events] == [MethodReceived]
    assert events[0].channel == 2048 and isinstance(events[0].method, m.ChannelOpen)


@settings(max_examples=50, deadline=None)
@given(
    st.integers(1, 65535),
    st.binary(max_size=3000),
    st.integers(1, 2**63),
    st.booleans(),
    st.sampled_from([4096, 131072]),
)
def test_a_delivery_framed_by_the_home_node_is_the_delivery_made_here(
    channel: int, body: bytes, delivery_tag: int, redelivered: bool, frame_max: int
) -> None:
    """A remote queue's home node frames the content; the client's node adds basic.deliver."""
    tag, exchange_and_key = shortstr("ctag"), shortstr("ex") + shortstr("key")
    header = encode_header_payload(60, len(body), BasicProperties(delivery_mode=2).encode())
    here = deliver_frames(
        channel, tag, delivery_tag, redelivered, exchange_and_key, header, body, frame_max
    )
    content = framed_content(channel, header, body, frame_max)
    framed = deliver_framed(channel, tag, delivery_tag, redelivered, exchange_and_key, content)
    assert framed == here
