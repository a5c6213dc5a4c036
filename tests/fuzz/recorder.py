"""A TCP relay that keeps what each client sent, to seed the fuzzers with real transcripts."""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading


class RecordingRelay:
    """Listens on 127.0.0.1:0 and relays every connection to `upstream_port`; `transcripts`
    holds the bytes each client sent, one entry per connection, in the order they connected."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.transcripts: list[bytearray] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._stopped = threading.Event()
        self._threads: list[threading.Thread] = []
        self._accepting = threading.Thread(target=self._accept, daemon=True)
        self._accepting.start()

    def _accept(self) -> None:
        self._listener.settimeout(0.2)
        while not self._stopped.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            transcript = bytearray()
            self.transcripts.append(transcript)
            relay = threading.Thread(target=self._relay, args=(client, transcript), daemon=True)
            self._threads.append(relay)
            relay.start()

    def _relay(self, client: socket.socket, transcript: bytearray) -> None:
        upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
        peers = {client: upstream, upstream: client}
        with selectors.DefaultSelector() as selector:
            for sock in peers:
                selector.register(sock, selectors.EVENT_READ)
            open_sockets = 2
            while open_sockets and not self._stopped.is_set():
                for key, _ in selector.select(timeout=0.2):
                    sock: socket.socket = key.fileobj  # type: ignore[assignment]
                    try:
                        data = sock.recv(65536)
                    except OSError:
                        data = b""
                    if not data:
                        selector.unregister(sock)
                        open_sockets -= 1
                        with contextlib.suppress(OSError):
                            peers[sock].shutdown(socket.SHUT_WR)
                        continue
                    if sock is client:
                        transcript.extend(data)
                    with contextlib.suppress(OSError):
                        peers[sock].sendall(data)
        client.close()
        upstream.close()

    def wait_idle(self, timeout: float = 10.0) -> None:
        """Wait (bounded) until every relayed connection has been closed by both sides."""
        for thread in list(self._threads):
            thread.join(timeout)

    def stop(self) -> None:
        self._stopped.set()
        self._listener.close()
        self._accepting.join(5)
        for thread in self._threads:
            thread.join(5)
