"""Hostile clients and the measures the hostile tests take of a node process."""

from __future__ import annotations

import socket
import struct
import threading
import time
from pathlib import Path

import pika

from leveret.amqp import methods as m
from leveret.amqp.constants import PROTOCOL_HEADER
from leveret.amqp.frames import method_frame

START_OK = method_frame(0, m.ConnectionStartOk({}, "PLAIN", b"\x00guest\x00guest", "en_US"))


def rss_bytes(pid: int) -> int:
    """Resident memory of a process, from /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for {pid}")


def open_fds(pid: int) -> int:
    return len(list(Path(f"/proc/{pid}/fd").iterdir()))


def connect(port: int, timeout: float = 5.0, source: str = "127.0.0.1") -> socket.socket:
    """A socket to the node from `source`: any 127.x.y.z address is this host's own, and the
    node tells them apart as it would tell apart clients on other hosts."""
    return socket.create_connection(
        ("127.0.0.1", port), timeout=timeout, source_address=(source, 0)
    )


def abandon_mid_handshake(port: int, index: int, source: str = "127.0.0.1") -> socket.socket:
    """A connection left at one of the handshake's steps, chosen by `index`."""
    sock = connect(port, timeout=10.0, source=source)
    step = index % 3
    if step == 0:
        sock.sendall(PROTOCOL_HEADER[:5])  # part of the protocol header
    elif step == 1:
        sock.sendall(PROTOCOL_HEADER)  # the header, then nothing (connection.start unread)
    else:
        sock.sendall(PROTOCOL_HEADER + START_OK[:20])  # half a start-ok
    return sock


def handshake(sock: socket.socket, frame_max: int = 131072) -> None:
    """Protocol header to connection.open-ok and channel 1, over a raw socket."""
    sock.sendall(PROTOCOL_HEADER)
    read_frame(sock)  # connection.start
    sock.sendall(START_OK)
    read_frame(sock)  # connection.tune
    sock.sendall(
        method_frame(0, m.ConnectionTuneOk(2047, frame_max, 0))
        + method_frame(0, m.ConnectionOpen("/"))
        + method_frame(1, m.ChannelOpen())
    )
    read_frame(sock)  # open-ok
    read_frame(sock)  # channel.open-ok


def read_frame(sock: socket.socket) -> tuple[int, int, bytes] | None:
    """One frame, or None once the node has closed the socket."""
    head = _read_exactly(sock, 7)
    if head is None:
        return None
    kind, channel, size = struct.unpack(">BHI", head)
    rest = _read_exactly(sock, size + 1)
    if rest is None:
        return None
    return kind, channel, rest[:-1]


def _read_exactly(sock: socket.socket, count: int) -> bytes | None:
    data = b""
    while len(data) < count:
        try:
            chunk = sock.recv(count - len(data))
        except (ConnectionResetError, TimeoutError):
            return None
        if not chunk:
            return None
        data += chunk
    return data


def read_close(sock: socket.socket) -> m.ConnectionClose | None:
    """The node's connection.close, skipping other frames; None if the socket closes first."""
    while True:
        frame = read_frame(sock)
        if frame is None:
            return None
        kind, _, payload = frame
        if kind == 1:
            method = m.decode_method(payload)
            if isinstance(method, m.ConnectionClose):
                return method


def closed_by_peer(sock: socket.socket, timeout: float) -> bool:
    """Whether the node closes the socket within `timeout` (what it sends is read and dropped)."""
    sock.settimeout(timeout)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if not sock.recv(65536):
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False
    return False


class Slowloris:
    """Clients that send the protocol header one byte at a time, slower and slower, and never
    finish it; `closed_after` records how long the node let each of them live."""

    def __init__(
        self, port: int, clients: int, interval: float = 1.0, source: str = "127.0.0.1"
    ) -> None:
        self.socks = [connect(port, source=source) for _ in range(clients)]
        self.opened = time.monotonic()
        self.closed_after: list[float] = []
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._trickle, daemon=True)
        self._thread.start()

    def _trickle(self) -> None:
        alive = list(self.socks)
        for index in range(7):  # seven bytes of eight: the header never completes
            if self._stop.wait(self._interval) or not alive:
                break
            for sock in list(alive):
                try:
                    sock.sendall(PROTOCOL_HEADER[index : index + 1])
                except OSError:
                    alive.remove(sock)
                    self.closed_after.append(time.monotonic() - self.opened)
        for sock in alive:
            if closed_by_peer(sock, max(0.1, 15.0 - (time.monotonic() - self.opened))):
                self.closed_after.append(time.monotonic() - self.opened)

    def wait(self, timeout: float) -> None:
        self._thread.join(timeout)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        for sock in self.socks:
            sock.close()


class RoundTrips:
    """A well-behaved pika client, connected once, counting its publish-then-get round trips."""

    def __init__(self, url: str, payload: bytes = b"x" * 1024) -> None:
        self.payload = payload
        self.conn = pika.BlockingConnection(pika.URLParameters(url))
        self.channel = self.conn.channel()
        self.queue = self.channel.queue_declare("", exclusive=True).method.queue

    def count(self, seconds: float) -> int:
        """How many round trips it makes in `seconds`."""
        done = 0
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.channel.basic_publish("", self.queue, self.payload)
            method, _, body = self.channel.basic_get(self.queue, auto_ack=True)
            assert method is not None and body == self.payload
            done += 1
        return done

    def close(self) -> None:
        self.conn.close()


def round_trips(url: str, seconds: float, payload: bytes = b"x" * 1024) -> int:
    """How many publish-then-get round trips a new well-behaved pika client makes in `seconds`."""
    client = RoundTrips(url, payload)
    try:
        return client.count(seconds)
    finally:
        client.close()
