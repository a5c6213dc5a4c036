"""A raw-socket AMQP client for tests that send what real clients never would."""

from __future__ import annotations

import socket
import struct

from leveret.amqp import methods as m
from leveret.amqp.constants import PROTOCOL_HEADER
from leveret.amqp.frames import method_frame
from leveret.amqp.methods import Method, decode_method


class RawClient:
    def __init__(self, port: int, timeout: float = 5.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self._buffer = b""

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_frame(self) -> tuple[int, int, bytes] | None:
        """(type, channel, payload), or None once the node closed the socket."""
        while True:
            if len(self._buffer) >= 7:
                kind, channel, size = struct.unpack_from(">BHI", self._buffer)
                if len(self._buffer) >= 8 + size:
                    payload = self._buffer[7 : 7 + size]
                    self._buffer = self._buffer[8 + size :]
                    return kind, channel, payload
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self._buffer += chunk

    def read_method(self) -> tuple[int, Method] | None:
        while True:
            frame = self.read_frame()
            if frame is None:
                return None
            kind, channel, payload = frame
            if kind == 1:
                return channel, decode_method(payload)

    def read_raw(self) -> bytes:
        data = self._buffer
        self._buffer = b""
        try:
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    return data
                data += chunk
        except TimeoutError:
            return data

    def handshake(
        self,
        channel: int | None = 1,
        capabilities: dict[str, bool] | None = None,
        heartbeat: int = 0,
    ) -> None:
        self.send(PROTOCOL_HEADER)
        _, start = self.read_method()  # type: ignore[misc]
        assert isinstance(start, m.ConnectionStart)
        properties = {"capabilities": capabilities} if capabilities else {}
        self.send(
            method_frame(
                0, m.ConnectionStartOk(properties, "PLAIN", b"\x00guest\x00guest", "en_US")
            )
        )
        _, tune = self.read_method()  # type: ignore[misc]
        assert isinstance(tune, m.ConnectionTune)
        self.send(method_frame(0, m.ConnectionTuneOk(tune.channel_max, tune.frame_max, heartbeat)))
        self.send(method_frame(0, m.ConnectionOpen("/")))
        _, open_ok = self.read_method()  # type: ignore[misc]
        assert isinstance(open_ok, m.ConnectionOpenOk)
        if channel is not None:
            self.send(method_frame(channel, m.ChannelOpen()))
            _, ok = self.read_method()  # type: ignore[misc]
            assert isinstance(ok, m.ChannelOpenOk)

    def expect_connection_close(self) -> m.ConnectionClose:
        while True:
            result = self.read_method()
            assert result is not None, "socket closed without connection.close"
            _, method = result
            if isinstance(method, m.ConnectionClose):
                return method

    def close(self) -> None:
        self.sock.close()
