"""Fuzz target: the sans-IO connection parser alone, cross-checked against pamqp."""

from __future__ import annotations

from leveret.amqp.connection import (
    ConnectionFailed,
    ConnectionState,
    ServerConnection,
)
from leveret.amqp.constants import FRAME_HEADER, FRAME_METHOD
from leveret.amqp.errors import MAX_REPLY_TEXT, ReplyCode
from tests.fuzz.oracle import compare_header, compare_method
from tests.fuzz.streams import chunks, frames

# A publisher's read budget per turn, as the node uses it (leveret.server.protocol).
FRAMES_PER_TURN = 300
MAX_CONTENT = 1 << 20
# Payloads already compared with pamqp: mutated inputs repeat most of their frames, and the
# comparison costs more than the parse. Bounded, as everything kept across inputs.
_COMPARED: set[tuple[int, bytes]] = set()
_COMPARED_MAX = 200_000


def run_parser(data: bytes) -> None:
    """Feed one input to a fresh ServerConnection; any exception but an assertion is a bug."""
    conn = ServerConnection(max_content_size=MAX_CONTENT)
    for chunk in chunks(data):
        events = conn.receive_data(chunk, FRAMES_PER_TURN)
        while conn.has_buffered_frames:
            events += conn.receive_data(b"", FRAMES_PER_TURN)
        for event in events:
            if isinstance(event, ConnectionFailed):
                error = event.error
                assert error.code in ReplyCode.__members__.values()
                assert len(error.reply_text.encode("utf-8")) <= MAX_REPLY_TEXT
        # Memory: what waits is at most one partial frame, never more than frame_max allows.
        assert conn.buffered_bytes <= conn.frame_max + 8 or conn.state is ConnectionState.CLOSED
        if conn.state is ConnectionState.CLOSED:
            break
    for kind, _, payload in frames(data[1:]):
        if (kind, payload) in _COMPARED:
            continue
        if kind == FRAME_METHOD:
            compare_method(payload)
        elif kind == FRAME_HEADER and len(payload) >= 14:
            compare_header(payload)
        if len(_COMPARED) >= _COMPARED_MAX:
            _COMPARED.clear()
        _COMPARED.add((kind, payload))
