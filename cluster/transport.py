"""gRPC between nodes: the authenticated server, one channel per peer, batched Raft streams."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import ssl
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# gRPC's core logs connection events on stderr; the node's log says what matters.
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
import grpc

from cluster.address_book import AddressBook
from cluster.raft import Message
from cluster.raft_wire import encode_batch
from cluster.secret import Caller, CallSigner, CallVerifier
from proto import cluster_pb2_grpc, raft_pb2

log = logging.getLogger(__name__)

SERVICE_PATH = "/leveret.cluster.Cluster/"
# Raised from gRPC's 4 MiB so that a whole metadata snapshot fits in one InstallSnapshot.
MAX_MESSAGE_BYTES = 512 << 20
# Raft messages queued for one peer while its stream is slow; beyond this the oldest are
# dropped (Raft sends again what matters).
MAX_QUEUED_MESSAGES = 4096
MAX_BATCH_MESSAGES = 512
_MIN_BACKOFF_SECONDS = 0.05
_MAX_BACKOFF_SECONDS = 2.0
# At most one log line per peer and complaint in this many seconds.
_LOG_EVERY_SECONDS = 10.0

_COMMON_OPTIONS: list[tuple[str, Any]] = [
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    # Pings find a peer that stopped answering (SIGSTOP, a cut cable) within seconds.
    ("grpc.keepalive_time_ms", 2000),
    ("grpc.keepalive_timeout_ms", 3000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
]
_SERVER_OPTIONS: list[tuple[str, Any]] = [
    *_COMMON_OPTIONS,
    ("grpc.http2.min_recv_ping_interval_without_data_ms", 1000),
    ("grpc.http2.max_ping_strikes", 0),
    # gRPC shares ports between processes by default; a node must own its port.
    ("grpc.so_reuseport", 0),
]
_CHANNEL_OPTIONS: list[tuple[str, Any]] = [
    *_COMMON_OPTIONS,
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 2000),
    # By default gRPC shares one connection per address between a process's channels, backoff
    # included: a channel made to ask a node that just came back (see own_channel) would fail
    # at once for as long as the shared channel to that node waits out its backoff.
    ("grpc.use_local_subchannel_pool", 1),
]


# Adds a gRPC service to the node's cluster server (the node's queues, for instance), so that
# it listens on the cluster port and is authenticated like the cluster's own calls.
ServiceInstaller = Callable[[grpc.aio.Server], None]


class _StagedCertificates:
    """What gRPC's certificate fetcher hands out: a new configuration once after a reload, None
    (keep the current one) otherwise. gRPC asks from its own threads, before new handshakes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._staged: grpc.ServerCertificateConfiguration | None = None

    def stage(self, configuration: grpc.ServerCertificateConfiguration) -> None:
        with self._lock:
            self._staged = configuration

    def fetch(self) -> grpc.ServerCertificateConfiguration | None:
        with self._lock:
            staged, self._staged = self._staged, None
        return staged


@dataclass(frozen=True, slots=True)
class TlsFiles:
    """PEM files for TLS between nodes; with `ca`, each side also checks the other's cert.

    `reload()` reads the files again for the handshakes that follow: the gRPC server's, the data
    connections' (their SSLContexts change in place) and new channels to peers.
    """

    cert: Path
    key: Path
    ca: Path | None = None
    _staged: _StagedCertificates = field(
        default_factory=_StagedCertificates, compare=False, repr=False
    )
    _contexts: list[ssl.SSLContext] = field(default_factory=list, compare=False, repr=False)

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(str(path) for path in (self.cert, self.key, self.ca) if path is not None)

    def _configuration(self) -> grpc.ServerCertificateConfiguration:
        return grpc.ssl_server_certificate_configuration(
            [(self.key.read_bytes(), self.cert.read_bytes())],
            root_certificates=self.ca.read_bytes() if self.ca else None,
        )

    def server_credentials(self) -> grpc.ServerCredentials:
        return grpc.dynamic_ssl_server_credentials(
            self._configuration(),
            self._staged.fetch,
            require_client_authentication=self.ca is not None,
        )

    def channel_credentials(self) -> grpc.ChannelCredentials:
        return grpc.ssl_channel_credentials(
            root_certificates=self.ca.read_bytes() if self.ca else None,
            private_key=self.key.read_bytes(),
            certificate_chain=self.cert.read_bytes(),
        )

    def server_context(self) -> ssl.SSLContext:
        """The same checks as `server_credentials`, for a plain asyncio listener."""
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._load(context)
        if self.ca is not None:
            context.verify_mode = ssl.CERT_REQUIRED
        self._contexts.append(context)
        return context

    def client_context(self) -> ssl.SSLContext:
        """The same checks as `channel_credentials` (the server's name included), for a plain
        asyncio connection."""
        context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=self.ca)
        self._load(context)
        self._contexts.append(context)
        return context

    def _load(self, context: ssl.SSLContext) -> None:
        context.load_cert_chain(self.cert, self.key)
        if self.ca is not None:
            context.load_verify_locations(self.ca)

    def reload(self) -> None:
        """Use the files as they are now for new handshakes; raises (OSError, ssl.SSLError)
        and changes nothing when they do not load or the key does not match."""
        self._load(ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER))  # proves the files first
        configuration = self._configuration()
        for context in self._contexts:
            self._load(context)
        self._staged.stage(configuration)


class LogThrottle:
    """Lets one log line per key through every few seconds."""

    def __init__(self) -> None:
        self._last: dict[str, float] = {}

    def allows(self, key: str) -> bool:
        now = time.monotonic()
        if now - self._last.get(key, -_LOG_EVERY_SECONDS) < _LOG_EVERY_SECONDS:
            return False
        self._last[key] = now
        return True


class AuthInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Refuses every call whose credentials do not prove knowledge of the cluster secret."""

    def __init__(self, verifier: CallVerifier, on_caller: Callable[[Caller], None]) -> None:
        self._verifier = verifier
        self._on_caller = on_caller
        self._throttle = LogThrottle()

    async def intercept_service(
        self,
        continuation: Callable[[Any], Awaitable[grpc.RpcMethodHandler]],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler | None:
        handler = await continuation(details)
        if handler is None:
            return None
        verdict = self._verifier.verify(details.method, details.invocation_metadata or ())
        if isinstance(verdict, Caller):
            self._on_caller(verdict)
            return handler
        return self._refusing(handler, details.method, verdict)

    def _refusing(
        self, handler: grpc.RpcMethodHandler, method: str, reason: str
    ) -> grpc.RpcMethodHandler:
        async def refuse(_request: Any, context: grpc.aio.ServicerContext) -> Any:
            peer = context.peer()
            if self._throttle.allows(f"{peer}:{reason}"):
                log.warning(
                    "rejected an unauthenticated cluster call %s from %s: %s (every node of a "
                    "cluster needs the same cluster secret, see --cluster-secret-file)",
                    method,
                    peer,
                    reason,
                )
            await context.abort(
                grpc.StatusCode.UNAUTHENTICATED, f"cluster authentication failed: {reason}"
            )

        if handler.request_streaming and handler.response_streaming:
            make = grpc.stream_stream_rpc_method_handler
        elif handler.request_streaming:
            make = grpc.stream_unary_rpc_method_handler
        else:
            make = grpc.unary_unary_rpc_method_handler
        return make(
            refuse,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )


def caller_of(context: grpc.aio.ServicerContext) -> Caller:
    """Who made a call that the AuthInterceptor let through."""
    values = {key: value for key, value in context.invocation_metadata() or ()}
    return Caller(str(values["x-leveret-node"]), str(values["x-leveret-address"]))


async def start_server(
    servicer: cluster_pb2_grpc.ClusterServicer,
    bind: str,
    port: int,
    verifier: CallVerifier,
    on_caller: Callable[[Caller], None],
    tls: TlsFiles | None = None,
    services: Sequence[ServiceInstaller] = (),
) -> tuple[grpc.aio.Server, int]:
    """Serve the Cluster service, and the `services` others add, on bind:port; returns the
    server and the bound port."""
    server = grpc.aio.server(
        interceptors=[AuthInterceptor(verifier, on_caller)], options=_SERVER_OPTIONS
    )
    cluster_pb2_grpc.add_ClusterServicer_to_server(servicer, server)
    for install in services:
        install(server)
    host = f"[{bind}]" if ":" in bind else bind
    target = f"{host}:{port}"
    try:
        if tls is None:
            bound = server.add_insecure_port(target)
        else:
            bound = server.add_secure_port(target, tls.server_credentials())
    except RuntimeError:  # gRPC's way of saying it could not bind
        bound = 0
    if bound == 0:
        raise OSError(f"cannot listen for cluster traffic on {target}: the address is in use")
    await server.start()
    return server, bound


class PeerChannels:
    """One gRPC channel per peer address, and the signed calls made over them."""

    def __init__(self, signer: CallSigner, tls: TlsFiles | None = None) -> None:
        self.signer = signer
        self._tls = tls
        self._channels: dict[str, grpc.aio.Channel] = {}
        self._stubs: dict[str, cluster_pb2_grpc.ClusterStub] = {}

    def channel(self, address: str) -> grpc.aio.Channel:
        """The channel to the node at `address` (it connects lazily)."""
        channel = self._channels.get(address)
        if channel is None:
            channel = self._channels[address] = self.own_channel(address)
        return channel

    def own_channel(self, address: str) -> grpc.aio.Channel:
        """A channel to `address` that is not shared (the caller closes it): it connects on its
        first call, whatever backoff the shared one is waiting out."""
        if self._tls is None:
            return grpc.aio.insecure_channel(address, options=_CHANNEL_OPTIONS)
        return grpc.aio.secure_channel(
            address, self._tls.channel_credentials(), options=_CHANNEL_OPTIONS
        )

    def stub(self, address: str) -> cluster_pb2_grpc.ClusterStub:
        """The Cluster stub for the node at `address`."""
        stub = self._stubs.get(address)
        if stub is None:
            stub = self._stubs[address] = cluster_pb2_grpc.ClusterStub(self.channel(address))
        return stub

    def metadata(self, method: str) -> tuple[tuple[str, str], ...]:
        """Credentials for one call of `method` (its bare name, e.g. "Submit")."""
        return self.signer.metadata(SERVICE_PATH + method)

    def metadata_for(self, path: str) -> tuple[tuple[str, str], ...]:
        """Credentials for one call of another service's method (`/package.Service/Method`)."""
        return self.signer.metadata(path)

    async def call(self, address: str, method: str, request: Any, timeout: float) -> Any:
        """Call unary `method` on the node at `address`; raises grpc.aio.AioRpcError."""
        function = getattr(self.stub(address), method)
        return await function(request, timeout=timeout, metadata=self.metadata(method))

    async def drop(self, address: str) -> None:
        """Close the channel to `address` (that node moved or left)."""
        self._stubs.pop(address, None)
        channel = self._channels.pop(address, None)
        if channel is not None:
            await channel.close()

    async def close(self) -> None:
        for address in list(self._channels):
            await self.drop(address)


class RaftStreams:
    """Sends Raft messages to peers: one long-lived stream and one sender task per peer.

    The same streams carry the metadata commands a follower forwards to the leader and the
    leader's answers to them (cluster/forwarding.py).
    """

    def __init__(self, own_name: str, book: AddressBook, channels: PeerChannels) -> None:
        self._own_name = own_name
        self._book = book
        self._channels = channels
        self._senders: dict[str, _RaftSender] = {}
        self._throttle = LogThrottle()
        # Told the ids of forwarded commands dropped before they were written to a stream.
        self.on_forward_dropped: Callable[[list[int]], None] = lambda ids: None
        # Told of a peer that closed our stream because we are not a member of its cluster:
        # it took nothing of what we sent.
        self.on_refused_by: Callable[[str], None] = lambda peer: None
        # Told of a peer whose stream broke: what it took will not be answered on it (and the
        # peer may be gone, which a quiet Raft group must hear of).
        self.stream_down_listeners: list[Callable[[str], None]] = []

    def send(self, messages: Sequence[Message]) -> None:
        """Queue `messages` for their destinations; never waits."""
        by_peer: dict[str, list[Message]] = {}
        for message in messages:
            by_peer.setdefault(message.dst, []).append(message)
        for peer, batch in by_peer.items():
            self._sender(peer).push(batch)

    def forward(self, peer: str, forwarded: raft_pb2.Forwarded) -> None:
        """Queue a command for the leader `peer`, ahead of Raft messages queued after it."""
        self._sender(peer).push_extra(forwarded=forwarded)

    def answer(self, peer: str, outcome: raft_pb2.ForwardOutcome) -> None:
        """Queue the answer to a command `peer` forwarded."""
        self._sender(peer).push_extra(outcome=outcome)

    def connected(self, peer: str) -> bool:
        """Whether the stream to `peer` is up (it has carried a batch and not failed since)."""
        sender = self._senders.get(peer)
        return sender is not None and sender.connected

    def _sender(self, peer: str) -> _RaftSender:
        sender = self._senders.get(peer)
        if sender is None:
            sender = _RaftSender(
                peer,
                self._own_name,
                self._book,
                self._channels,
                self._throttle,
                lambda ids: self.on_forward_dropped(ids),
                lambda: self.on_refused_by(peer),
                lambda: self._stream_down(peer),
            )
            self._senders[peer] = sender
        return sender

    def _stream_down(self, peer: str) -> None:
        for listener in self.stream_down_listeners:
            listener(peer)

    def unreachable(self) -> set[str]:
        """Peers whose stream is down right now."""
        return {peer for peer, sender in self._senders.items() if not sender.connected}

    async def close(self) -> None:
        senders, self._senders = list(self._senders.values()), {}
        for sender in senders:
            await sender.close()


class _RaftSender:
    """The stream to one peer; reconnects with backoff and drops what it could not send."""

    def __init__(
        self,
        peer: str,
        own_name: str,
        book: AddressBook,
        channels: PeerChannels,
        throttle: LogThrottle,
        forward_dropped: Callable[[list[int]], None],
        refused: Callable[[], None],
        broke: Callable[[], None],
    ) -> None:
        self.peer = peer
        self.connected = False
        self._own_name = own_name
        self._book = book
        self._channels = channels
        self._throttle = throttle
        self._forward_dropped = forward_dropped
        self._refused = refused
        self._broke = broke
        self._queue: deque[Message] = deque()
        self._forwarded: list[raft_pb2.Forwarded] = []
        self._outcomes: list[raft_pb2.ForwardOutcome] = []
        self._wakeup = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"raft-to-{peer}")

    def push(self, messages: list[Message]) -> None:
        self._queue.extend(messages)
        while len(self._queue) > MAX_QUEUED_MESSAGES:
            self._queue.popleft()
        self._wakeup.set()

    def push_extra(
        self,
        forwarded: raft_pb2.Forwarded | None = None,
        outcome: raft_pb2.ForwardOutcome | None = None,
    ) -> None:
        # Never dropped for space: each waits for an answer (and a client for it).
        if forwarded is not None:
            self._forwarded.append(forwarded)
        if outcome is not None:
            self._outcomes.append(outcome)
        self._wakeup.set()

    async def close(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    async def _wait_for_messages(self) -> None:
        while not (self._queue or self._forwarded or self._outcomes):
            self._wakeup.clear()
            await self._wakeup.wait()

    def _next_batch(self) -> raft_pb2.RaftBatch:
        count = min(len(self._queue), MAX_BATCH_MESSAGES)
        batch = encode_batch(
            self._own_name, self.peer, [self._queue.popleft() for _ in range(count)]
        )
        # The receiver reads the answers before the messages: it learns where a command went
        # before it steps the entries that carry it.
        if self._forwarded:
            batch.forwarded.extend(self._forwarded)
            self._forwarded = []
        if self._outcomes:
            batch.outcomes.extend(self._outcomes)
            self._outcomes = []
        return batch

    def _drop_unsent(self) -> None:
        self._queue.clear()  # stale by the time the peer is back
        self._outcomes = []  # the forwarding node times out, as for a lost call
        if self._forwarded:
            dropped, self._forwarded = [item.id for item in self._forwarded], []
            self._forward_dropped(dropped)

    async def _run(self) -> None:
        backoff = _MIN_BACKOFF_SECONDS
        while True:
            await self._wait_for_messages()
            address = self._book.get(self.peer)
            if address is None:
                self._drop_unsent()  # nowhere to send them; Raft sends again once we know
                continue
            call = self._channels.stub(address).Raft(metadata=self._channels.metadata("Raft"))
            try:
                while self._book.get(self.peer) == address:
                    await call.write(self._next_batch())
                    self.connected = True
                    backoff = _MIN_BACKOFF_SECONDS
                    await self._wait_for_messages()
            except asyncio.CancelledError:
                call.cancel()
                raise
            except Exception as error:  # noqa: BLE001 - however the stream broke, start another
                self.connected = False
                # A write after the peer closed the stream fails without its status: ask for it.
                code = error.code() if isinstance(error, grpc.aio.AioRpcError) else None
                if code is None and call.done():
                    code = await call.code()
                call.cancel()
                self._drop_unsent()
                self._broke()
                self._report(address, error, code)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, _MAX_BACKOFF_SECONDS)
            else:
                call.cancel()  # the peer moved to another address

    def _report(self, address: str, error: Exception, code: grpc.StatusCode | None) -> None:
        if code is grpc.StatusCode.UNAUTHENTICATED:
            if self._throttle.allows(f"auth:{self.peer}"):
                log.warning(
                    "node %s at %s refused our cluster credentials: %s",
                    self.peer,
                    address,
                    error.details() if isinstance(error, grpc.aio.AioRpcError) else error,
                )
        elif code is grpc.StatusCode.FAILED_PRECONDITION:
            self._refused()
            if self._throttle.allows(f"member:{self.peer}"):
                details = error.details() if isinstance(error, grpc.aio.AioRpcError) else error
                log.warning("node %s refuses our Raft traffic: %s", self.peer, details)
        elif self._throttle.allows(f"down:{self.peer}"):
            log.info("Raft stream to %s at %s is down: %s", self.peer, address, code or error)
