"""Inputs the fuzzers found, pinned: each broke the connection parser before its fix."""

from __future__ import annotations

from leveret.amqp.connection import ServerConnection
from leveret.amqp.constants import PROTOCOL_HEADER


def test_a_partial_protocol_header_is_not_taken_for_a_waiting_frame() -> None:
    # Seven bytes of the header read as a frame head announce 0x50000009 bytes, more than
    # frame_max: the node took that for a frame to handle next turn and spun until the 8th byte.
    conn = ServerConnection()
    assert conn.receive_data(PROTOCOL_HEADER[:7], 300) == []
    assert not conn.has_buffered_frames
    assert len(conn.receive_data(PROTOCOL_HEADER[7:], 300)) == 1
