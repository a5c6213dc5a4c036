"""Data connections between nodes (cluster/data_connection.py): the handshake on the cluster
secret, what a peer that breaks the protocol gets, flow control and silence, on loopback."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from cluster import data_connection
from cluster.data_connection import DataConnection, DataRefused, open_data, serve_data
from cluster.frames import frame_header
from cluster.secret import Caller, CallSigner, CallVerifier
from proto import queues_pb2
from tests.cluster.test_service import make_certificates

SECRET = b"the data plane's test secret"


class Collector:
    """A Receiver that keeps what it gets, and answers each Up with a Confirm."""

    def __init__(self, connection: DataConnection | None = None, echo: bool = False) -> None:
        self.connection = connection
        self.echo = echo
        self.messages: list[Any] = []
        self.drained = 0
        self.reads = 0  # reads whose frames were all handed over
        self.gone = asyncio.Event()

    def received(self, message: Any) -> None:
        self.messages.append(message)
        if self.echo and self.connection is not None and message.publishes:
            frames = queues_pb2.FromHome()
            frames.down.add().confirms.add().upto = int(message.publishes[-1].routing_key)
            self.connection.write(frames.SerializeToString())

    def writable(self) -> None:
        self.drained += 1

    def read_taken(self) -> None:
        self.reads += 1

    def ended(self) -> None:
        self.gone.set()


class Home:
    """A listening side whose accepted connections are kept, with their peers."""

    def __init__(self) -> None:
        self.accepted: list[tuple[Caller, Collector]] = []
        self.server: asyncio.Server | None = None
        self.port = 0

    def accept(self, caller: Caller, connection: DataConnection) -> Collector:
        collector = Collector(connection, echo=True)
        self.accepted.append((caller, collector))
        return collector

    async def __aenter__(self) -> Home:
        self.server = await serve_data("127.0.0.1", 0, CallVerifier(SECRET), self.accept, None)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self.server is not None
        self.server.close()


def signer(secret: bytes = SECRET, name: str = "b@localhost") -> CallSigner:
    return CallSigner(secret, name, "127.0.0.1:1")


def publishes(*seqs: int, body: bytes = b"hello") -> bytes:
    frames = queues_pb2.ToHome()
    for seq in seqs:
        publish = frames.up.add().publishes.add()
        publish.routing_key = str(seq)  # (a home node numbers publishes by their order)
        publish.body = body
    return frames.SerializeToString()


async def until(predicate: Callable[[], Any], timeout: float = 5.0) -> None:
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.01)


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(scenario(), 30))


async def raw_client(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, bytes]:
    """A plain socket past the home's challenge: (reader, writer, the nonce)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    first = await reader.read(4096)
    challenge = queues_pb2.FromHome.FromString(first).challenge
    assert challenge.nonce
    return reader, writer, challenge.nonce.encode()


async def closed_by_peer(reader: asyncio.StreamReader, timeout: float = 5.0) -> bool:
    """Whether the other side closes the connection (what it says before that is skipped)."""
    async with asyncio.timeout(timeout):
        while await reader.read(65536):
            pass
    return True


def test_frames_go_both_ways_once_the_secret_is_proved() -> None:
    async def scenario() -> None:
        async with Home() as home:
            mine = Collector()
            connection = await open_data("a", "127.0.0.1", home.port, signer(), mine, None, 5)
            connection.write(publishes(1, 2, 3))
            await until(lambda: len(mine.messages) == 3)
            caller, theirs = home.accepted[0]
            assert caller == Caller("b@localhost", "127.0.0.1:1")
            assert [up.publishes[0].routing_key for up in theirs.messages] == ["1", "2", "3"]
            assert [down.confirms[0].upto for down in mine.messages] == [1, 2, 3]
            # Each side hears when a read's frames have all been handed over (it flushes then).
            assert 1 <= theirs.reads <= 3 and 1 <= mine.reads <= 3
            connection.close()
            await asyncio.wait_for(theirs.gone.wait(), 5)

    run(scenario)


def test_a_wrong_secret_is_refused_and_the_home_keeps_serving() -> None:
    async def scenario() -> None:
        async with Home() as home:
            with pytest.raises(DataRefused, match="wrong cluster secret"):
                await open_data(
                    "a", "127.0.0.1", home.port, signer(b"not it"), Collector(), None, 5
                )
            assert home.accepted == []
            mine = Collector()
            connection = await open_data("a", "127.0.0.1", home.port, signer(), mine, None, 5)
            connection.write(publishes(7))
            await until(lambda: mine.messages)
            connection.close()

    run(scenario)


def test_credentials_signed_for_another_challenge_are_refused() -> None:
    async def scenario() -> None:
        async with Home() as home:
            reader, writer, _ = await raw_client(home.port)
            values = dict(signer().metadata(f"{data_connection.DATA_PATH}/some-other-nonce"))
            hello = queues_pb2.Hello(
                node=values["x-leveret-node"],
                address=values["x-leveret-address"],
                auth=values["x-leveret-auth"],
            )
            writer.write(queues_pb2.ToHome(hello=hello).SerializeToString())
            verdict = queues_pb2.FromHome.FromString(await reader.read(4096)).verdict
            assert "wrong cluster secret" in verdict.refused
            assert await closed_by_peer(reader)
            assert home.accepted == []
            writer.close()

    run(scenario)


@pytest.mark.parametrize(
    "garbage",
    [
        pytest.param(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", id="another protocol"),
        pytest.param(publishes(1), id="data before credentials"),
        pytest.param(frame_header(2, data_connection.HANDSHAKE_FRAME_BYTES + 1), id="long hello"),
        pytest.param(frame_header(2, 1 << 40), id="huge length"),
        pytest.param(b"\x12" + b"\xff" * 16, id="endless varint"),
    ],
)
def test_garbage_before_credentials_closes_that_connection_only(garbage: bytes) -> None:
    async def scenario() -> None:
        async with Home() as home:
            mine = Collector()
            good = await open_data("a", "127.0.0.1", home.port, signer(), mine, None, 5)
            reader, writer, _ = await raw_client(home.port)
            writer.write(garbage)
            assert await closed_by_peer(reader)
            writer.close()
            good.write(publishes(1))
            await until(lambda: mine.messages)
            assert len(home.accepted) == 1
            good.close()

    run(scenario)


def test_an_over_long_frame_after_credentials_closes_that_connection_only() -> None:
    async def scenario() -> None:
        async with Home() as home:
            bystander = Collector()
            other = await open_data("a", "127.0.0.1", home.port, signer(), bystander, None, 5)
            offender = await open_data("a", "127.0.0.1", home.port, signer(), Collector(), None, 5)
            # Only a header: the home must not wait for (nor keep) the half gigabyte it promises.
            offender.write(frame_header(1, data_connection.MAX_FRAME_BYTES + 1))
            await offender.wait_closed()
            _, theirs = home.accepted[1]
            await asyncio.wait_for(theirs.gone.wait(), 5)
            other.write(publishes(1))
            await until(lambda: bystander.messages)
            assert other.is_open
            other.close()

    run(scenario)


def test_a_peer_that_never_proves_itself_is_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(data_connection, "HANDSHAKE_SECONDS", 0.2)

    async def scenario() -> None:
        async with Home() as home:
            reader, writer, _ = await raw_client(home.port)
            writer.write(b"\x12")  # the start of a Hello, and nothing more
            assert await closed_by_peer(reader, timeout=3)
            writer.close()

    run(scenario)


def test_a_silent_peer_is_closed_and_a_quiet_one_is_not(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(data_connection, "HEARTBEAT_SECONDS", 0.05)
    monkeypatch.setattr(data_connection, "SILENT_SECONDS", 0.3)

    async def scenario() -> None:
        async with Home() as home:
            # Nothing to say for longer than the silence allowed: heartbeats keep it open.
            quiet = await open_data("a", "127.0.0.1", home.port, signer(), Collector(), None, 5)
            await asyncio.sleep(0.8)
            assert quiet.is_open
            # A peer whose process is stopped sends nothing, heartbeats included.
            silent = await open_data("a", "127.0.0.1", home.port, signer(), Collector(), None, 5)
            assert silent._heartbeat is not None
            silent._heartbeat.cancel()
            _, theirs = home.accepted[1]
            await asyncio.wait_for(theirs.gone.wait(), 3)
            assert quiet.is_open
            quiet.close()

    run(scenario)


def test_a_reader_that_stops_holds_the_writer_back_and_releases_it() -> None:
    async def scenario() -> None:
        async with Home() as home:
            mine = Collector()
            connection = await open_data("a", "127.0.0.1", home.port, signer(), mine, None, 5)
            await until(lambda: home.accepted)
            home_end = home.accepted[0][1].connection
            assert home_end is not None
            home_end.pause_reading()
            body = b"x" * 65536
            sent = 0
            while connection.can_write and sent < 4096:
                connection.write(publishes(sent + 1, body=body))
                sent += 1
                await asyncio.sleep(0)
            assert not connection.can_write  # the home stopped reading: its buffers filled up
            home_end.resume_reading()
            await until(lambda: mine.drained == 1, timeout=10)
            await until(lambda: len(home.accepted[0][1].messages) == sent, timeout=10)
            connection.close()

    run(scenario)


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_frames_go_over_tls_when_the_cluster_uses_it(tmp_path: Path) -> None:
    tls = make_certificates(tmp_path)

    async def scenario() -> None:
        home = Home()
        server = await serve_data(
            "127.0.0.1", 0, CallVerifier(SECRET), home.accept, tls.server_context()
        )
        port = server.sockets[0].getsockname()[1]
        try:
            mine = Collector()
            connection = await open_data(
                "a", "127.0.0.1", port, signer(), mine, tls.client_context(), 5
            )
            connection.write(publishes(1))
            await until(lambda: mine.messages)
            connection.close()
            with pytest.raises((ConnectionError, OSError, TimeoutError)):
                await open_data("a", "127.0.0.1", port, signer(), Collector(), None, 2)
        finally:
            server.close()

    run(scenario)


def test_connections_awaiting_authentication_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(data_connection, "MAX_HANDSHAKES", 2)

    async def scenario() -> None:
        async with Home() as home:
            waiting = [await raw_client(home.port) for _ in range(2)]
            # A third is cut off at once, without a challenge: the first two hold the slots.
            reader, writer = await asyncio.open_connection("127.0.0.1", home.port)
            assert await closed_by_peer(reader, timeout=3)
            writer.close()
            # One of the two goes: its slot frees, and a peer with the secret gets in.
            waiting[0][1].close()
            connection = None
            for _ in range(50):  # until the home has seen the close and freed the slot
                try:
                    connection = await open_data(
                        "a@localhost", "127.0.0.1", home.port, signer(), Collector(), None, 5
                    )
                    break
                except (DataRefused, OSError, TimeoutError):
                    await asyncio.sleep(0.05)
            assert connection is not None
            await until(lambda: len(home.accepted) == 1)
            connection.close()
            waiting[1][1].close()

    run(scenario)
