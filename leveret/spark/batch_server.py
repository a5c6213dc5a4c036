"""Micro-batches held on the driver, fetched by the executors over TCP as Arrow IPC streams.

Why: a partition that carries its rows is Java-serialized into every task that reads it, and
Spark's JVM spends most of its time per message doing so (and collecting the garbage after).
A partition that only names its data (address, batch, index, token) is a few dozen bytes; the
executor asks the driver's reader for the bytes and hands them to Spark as Arrow.

The protocol is one request per connection: the batch's token (16 bytes), the batch and the
partition index (unsigned 64 and 32 bits, big-endian); the reply is a status byte and a length
(unsigned 64 bits), then the Arrow IPC stream (status 0) or an error text (status 1). A batch is
held until the reader commits it, so a task retried by Spark reads the same bytes again.
"""

from __future__ import annotations

import hmac
import secrets
import socket
import socketserver
import struct
import threading
from dataclasses import dataclass

import pyarrow as pa

_REQUEST = struct.Struct(">16sQI")
_REPLY = struct.Struct(">BQ")
_OK, _ERROR = 0, 1
# A request is sent at once; a client that sends nothing for this long is dropped.
_REQUEST_SECONDS = 30.0
# How long an executor waits for the driver to accept, answer, and keep sending.
_FETCH_SECONDS = 120.0


class FetchError(RuntimeError):
    """The driver refused a partition (unknown batch or token) or could not be reached."""


@dataclass(frozen=True)
class BatchRef:
    """Where an executor finds one partition of a micro-batch."""

    host: str
    port: int
    batch: int
    index: int
    token: bytes


class _Handler(socketserver.BaseRequestHandler):
    server: _Server

    def handle(self) -> None:
        self.request.settimeout(_REQUEST_SECONDS)
        try:
            request = _read_exactly(self.request, _REQUEST.size)
        except (OSError, FetchError):
            return  # a client that went away has no one to tell
        token, batch, index = _REQUEST.unpack(request)
        found = self.server.store.find(batch, index, token)
        try:
            if isinstance(found, str):
                text = found.encode()
                self.request.sendall(_REPLY.pack(_ERROR, len(text)) + text)
            else:
                self.request.sendall(_REPLY.pack(_OK, found.size))
                self.request.sendall(memoryview(found))
        except OSError:
            return  # the task is gone (killed or retried): a retry asks again


class _Store:
    """Each held batch's token and partitions; guarded, as handlers run on their own threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._batches: dict[int, tuple[bytes, list[pa.Buffer]]] = {}

    def put(self, batch: int, parts: list[pa.Buffer]) -> bytes:
        token = secrets.token_bytes(16)
        with self._lock:
            self._batches[batch] = (token, parts)
        return token

    def find(self, batch: int, index: int, token: bytes) -> pa.Buffer | str:
        with self._lock:
            held = self._batches.get(batch)
        # Unknown batches and wrong tokens get the same answer: a token is the only secret.
        if held is None or not hmac.compare_digest(held[0], token):
            return f"micro-batch {batch} is not held by the driver (committed, or another query's)"
        if not 0 <= index < len(held[1]):
            return f"micro-batch {batch} has no partition {index}"
        return held[1][index]

    def drop_through(self, batch: int) -> None:
        with self._lock:
            for held in [b for b in self._batches if b <= batch]:
                del self._batches[held]

    def held(self) -> list[int]:
        with self._lock:
            return sorted(self._batches)


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True  # a stuck executor never keeps the driver's reader from stopping
    store: _Store


class BatchServer:
    """Serves the micro-batches a stream reader planned, on an ephemeral port of `host`."""

    def __init__(self, host: str) -> None:
        self._server = _Server((host, 0), _Handler)
        self._server.store = _Store()
        self.host = host
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.2},
            name="leveret-spark-batch-server",
            daemon=True,
        )
        self._thread.start()

    def hold(self, batch: int, parts: list[pa.Buffer]) -> list[BatchRef]:
        token = self._server.store.put(batch, parts)
        return [BatchRef(self.host, self.port, batch, i, token) for i in range(len(parts))]

    def drop_through(self, batch: int) -> None:
        """Forget every batch up to `batch`: it is committed, no task reads it again."""
        self._server.store.drop_through(batch)

    def held(self) -> list[int]:
        return self._server.store.held()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5.0)


def _read_exactly(sock: socket.socket, size: int) -> bytearray:
    data = bytearray(size)
    view = memoryview(data)
    got = 0
    while got < size:
        n = sock.recv_into(view[got:])
        if n == 0:
            raise FetchError(f"the connection closed after {got} of {size} bytes")
        got += n
    return data


def fetch(ref: BatchRef) -> pa.Buffer:
    """One partition's Arrow IPC stream, from the driver that holds it."""
    address = f"{ref.host}:{ref.port}"
    try:
        with socket.create_connection((ref.host, ref.port), timeout=_FETCH_SECONDS) as sock:
            sock.sendall(_REQUEST.pack(ref.token, ref.batch, ref.index))
            status, size = _REPLY.unpack(_read_exactly(sock, _REPLY.size))
            body = _read_exactly(sock, size)
    except OSError as error:
        raise FetchError(
            f"could not fetch micro-batch {ref.batch} from the driver's reader at {address}: "
            f"{error}"
        ) from error
    if status != _OK:
        raise FetchError(f"the driver's reader at {address} refused: {body.decode()}")
    return pa.py_buffer(body)
