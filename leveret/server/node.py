"""A running node: the broker, its listeners, the ports file, and a clean shutdown."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol, cast

from ..broker import Broker
from ..config import Config, HttpsListener
from ..consumer_timeout import ConsumerTimeoutSweep
from ..memory import total_memory
from ..mgmt import DefinitionsFileError, load_definitions, read_definitions, start_management
from ..persistence import MessageStores
from ..session import open_sessions
from ..store import DiskMonitor
from ..sysexits import EX_CANTCREAT, EX_CONFIG, EX_UNAVAILABLE
from ..tls import CertificateReloader, TLSConfigError, server_context
from .admission import Admission, AdmissionSettings
from .collector import settle_after_start
from .data_dir_lock import DataDirInUse, DataDirLock
from .drain import DrainReport, drain
from .memory_monitor import MemoryMonitor
from .protocol import AMQPProtocol
from .tls_listener import TLSAcceptor

log = logging.getLogger(__name__)


class StartupError(Exception):
    """The node cannot start; `text` is one line for the operator, `exit_code` a sysexits code."""

    def __init__(self, exit_code: int, text: str) -> None:
        super().__init__(text)
        self.exit_code = exit_code
        self.text = text


class ReloadableFiles(Protocol):
    """TLS files an extension reads again when told to (cluster.transport.TlsFiles)."""

    @property
    def paths(self) -> tuple[str, ...]: ...

    def reload(self) -> None: ...


class Clustering(Protocol):
    """What a node needs of its cluster extension (leveret.clustering.plugin.ClusterPlugin)."""

    @property
    def tls_files(self) -> ReloadableFiles | None: ...

    @property
    def port(self) -> int: ...

    @property
    def data_port(self) -> int: ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def hand_over_leadership(self) -> None:
        """Let another member lead the metadata, when this node leads it."""
        ...


ClusteringFactory = Callable[[Config, Broker], Clustering]


class Federation(Protocol):
    """What a node needs of its federation extension (federation.plugin.FederationPlugin)."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


FederationFactory = Callable[[Broker], Federation]


class Node:
    """One node; `clustering` makes its cluster extension, handed in by whoever assembles it."""

    def __init__(
        self,
        config: Config,
        clustering: ClusteringFactory,
        federation: FederationFactory | None = None,
    ) -> None:
        self.config = config
        self._make_clustering = clustering
        self._make_federation = federation
        path = config.data_path
        self._lock = DataDirLock(path)
        try:
            path.mkdir(parents=True, exist_ok=True)
            self._lock.acquire()
        except DataDirInUse as error:
            raise StartupError(EX_CANTCREAT, str(error)) from None
        except OSError as error:
            raise StartupError(
                EX_CANTCREAT, f"cannot use the data directory {path}: {error.strerror or error}"
            ) from None
        try:
            self.stores = MessageStores(path)
        except OSError as error:
            self._lock.release()
            raise StartupError(
                EX_CANTCREAT, f"cannot open the data in {path}: {error.strerror or error}"
            ) from None
        self.broker = Broker(config, stores=self.stores)
        # One for both AMQP listeners: a client that fails on one is slowed on the other.
        self.admission = Admission(
            AdmissionSettings(
                threshold=config.admission_failures,
                window=float(config.admission_window),
                rate=float(config.admission_rate),
                max_held=config.admission_max_held,
            )
        )
        self.ports: dict[str, int] = {}
        self._servers: list[asyncio.Server] = []
        self._monitor: MemoryMonitor | None = None
        self._ack_timeout: ConsumerTimeoutSweep | None = None
        self._disk_task: asyncio.Task[None] | None = None
        self._definitions_task: asyncio.Task[None] | None = None
        self.cluster: Clustering | None = None
        self._cluster_started = False
        self.federation: Federation | None = None
        self.started = False  # every listener is up and the node is in its cluster
        self._amqp_server: asyncio.Server | None = None
        self._amqps_server: asyncio.Server | None = None
        # Every TLS certificate of the node (AMQPS, HTTPS, the cluster's) reloads through this
        # one, on SIGHUP or when its files change.
        self.reloader = CertificateReloader()

    async def start(self) -> None:
        """Join or form the cluster, whose replicated store gives this node its definitions
        (and so its queues, recovered from disk), then listen; StartupError says what failed."""
        config = self.config
        self.cluster = self._make_clustering(config, self.broker)
        _check_address(config.bind)
        self._cluster_started = True
        try:
            await self.cluster.start()
        except OSError as error:
            raise StartupError(EX_UNAVAILABLE, str(error)) from None
        self.ports["cluster"] = self.cluster.port
        cluster_tls = self.cluster.tls_files
        if cluster_tls is not None:
            self.reloader.register("node-to-node TLS", cluster_tls.paths, cluster_tls.reload)
        self.ports["data"] = self.cluster.data_port
        self._disk_task = asyncio.get_running_loop().create_task(self._watch_disk())
        loop = asyncio.get_running_loop()
        amqp = await self._listen(
            "AMQP",
            config.amqp_port,
            loop.create_server(
                lambda: AMQPProtocol(self.broker, self.admission),
                config.bind,
                config.amqp_port,
                reuse_address=True,
                backlog=1024,
            ),
        )
        self.ports["amqp"] = amqp.sockets[0].getsockname()[1]
        self._amqp_server = amqp
        await self._listen_amqps()
        await self._start_http()
        if config.load_definitions:
            try:
                document = read_definitions(config.load_definitions)
            except DefinitionsFileError as error:  # as RabbitMQ: a bad file stops the start
                raise StartupError(EX_CONFIG, str(error)) from None
            self._definitions_task = asyncio.get_running_loop().create_task(
                load_definitions(self.broker, document, config.load_definitions),
                name="load-definitions",
            )
        total = total_memory()
        limit = config.memory_limit(total)
        self._monitor = MemoryMonitor(self.broker, limit)
        self._monitor.start()
        self._ack_timeout = ConsumerTimeoutSweep(
            config.consumer_timeout,
            lambda: (ch for s in open_sessions(self.broker) for ch in s.channels.values()),
        )
        self._ack_timeout.start()
        # As RabbitMQ does, say which memory alarm is in force: a limit above the machine's
        # memory, or one below what a node needs, is a mistake the operator should see.
        log.info(
            "memory high watermark set to %d bytes (%s) of %d bytes total",
            limit,
            config.memory_high_watermark,
            total,
        )
        log.info(
            "node %s accepting AMQP connections on port %d", config.node_name, self.ports["amqp"]
        )
        if self._make_federation is not None:
            self.federation = self._make_federation(self.broker)
            await self.federation.start()
        self.reloader.start()
        if config.ports_file:
            _write_atomically(Path(config.ports_file), json.dumps(self.ports))
        settle_after_start()
        self.started = True

    async def _listen_amqps(self) -> None:
        """AMQP over TLS, when [ssl_options] is configured: the same protocol as plain AMQP
        behind a TLS handshake."""
        config = self.config
        port = config.amqps_listener_port
        if port is None or config.ssl_options is None:
            return
        try:
            context = server_context(config.ssl_options)
        except TLSConfigError as error:
            raise StartupError(EX_CONFIG, str(error)) from None
        self.reloader.register_context("the AMQPS listener", context, config.ssl_options)
        loop = asyncio.get_running_loop()
        amqps = await self._listen(
            "AMQPS",
            port,
            loop.create_server(
                lambda: TLSAcceptor(
                    context,
                    lambda: AMQPProtocol(self.broker, self.admission, admitted=True),
                    self.admission,
                ),
                config.bind,
                port,
                reuse_address=True,
                backlog=1024,
            ),
        )
        self.ports["amqps"] = amqps.sockets[0].getsockname()[1]
        self._amqps_server = amqps
        log.info("accepting AMQPS (AMQP over TLS) connections on port %d", self.ports["amqps"])

    @property
    def draining(self) -> bool:
        return self.broker.draining

    async def drain(self, timeout: float) -> DrainReport:
        """Before a stop: hand clients and leadership to the other nodes (see drain.py)."""
        cluster = self.cluster
        listeners = [s for s in (self._amqp_server, self._amqps_server) if s is not None]

        async def hand_over() -> None:
            if cluster is not None:
                await cluster.hand_over_leadership()

        def stop_listening() -> None:
            for server in listeners:
                server.close()

        return await drain(self.broker, stop_listening, hand_over, timeout)

    async def _start_http(self) -> None:
        """The management API over HTTP, and HTTPS when configured; /metrics also on ports of
        its own when configured. HTTPS first: with `only`, the plain port names it."""
        config = self.config
        management, prometheus = config.management_ssl, config.prometheus_ssl
        await self._start_http_listener("mgmt_https", management, metrics_only=False)
        only = management is not None and management.only
        await self._start_http_listener(
            "mgmt", None, metrics_only=False, https_port=self.ports["mgmt_https"] if only else None
        )
        await self._start_http_listener("prometheus_https", prometheus, metrics_only=True)
        if config.prometheus_tcp_port is not None:
            await self._start_http_listener("prometheus", None, metrics_only=True)

    async def _start_http_listener(
        self,
        name: str,
        https: HttpsListener | None,
        *,
        metrics_only: bool,
        https_port: int | None = None,
    ) -> None:
        config = self.config
        port: int | None
        if name.endswith("_https"):
            if https is None:
                return
            port = https.port
            try:
                tls = server_context(https.tls)
            except TLSConfigError as error:
                raise StartupError(EX_CONFIG, str(error)) from None
            self.reloader.register_context(name, tls, https.tls)
        else:
            port = config.prometheus_tcp_port if metrics_only else config.mgmt_port
            tls = None
        assert port is not None
        what = "Prometheus metrics" if metrics_only else "the management API"
        server = await self._listen(
            what + (" (HTTPS)" if tls else ""),
            port,
            start_management(
                self.broker,
                config.bind,
                port,
                listeners=self.ports,
                node=self,
                tls=tls,
                name=name,
                metrics_only=metrics_only,
                https_port=https_port,
            ),
        )
        self.ports[name] = server.sockets[0].getsockname()[1]

    async def _listen(self, what: str, port: int, starting: Awaitable[Any]) -> asyncio.Server:
        try:
            server = cast(asyncio.Server, await starting)
        except OSError as error:
            reason = os.strerror(error.errno) if error.errno else str(error)
            raise StartupError(
                EX_UNAVAILABLE, f"cannot listen for {what} on {self.config.bind}:{port}: {reason}"
            ) from None
        self._servers.append(server)
        return server

    async def stop(self) -> None:
        """Stop what started (all of it, or what a failed or interrupted start got to)."""
        self.reloader.stop()
        if self.federation is not None:
            await self.federation.stop()
        if self.cluster is not None and self._cluster_started:  # hands leadership over first
            await self.cluster.stop()
        if self._monitor is not None:
            self._monitor.stop()
        if self._ack_timeout is not None:
            self._ack_timeout.stop()
        for task in (self._disk_task, self._definitions_task):
            if task is not None:
                task.cancel()
        for server in self._servers:
            server.close()
        for session in list(open_sessions(self.broker)):
            session.close_for_shutdown()
        for server in self._servers:
            try:
                # Sessions close their sockets within CLOSE_GRACE_SECONDS; do not hang on a peer.
                await asyncio.wait_for(server.wait_closed(), 5)
            except TimeoutError:
                log.warning("some connections did not close in time")
        queue_stores = [
            queue.store
            for vhost in self.broker.vhosts.values()
            for queue in vhost.queues.values()
            if queue.store is not None
        ]
        await self.stores.close(queue_stores)
        self._lock.release()

    async def _watch_disk(self) -> None:
        """RabbitMQ's disk alarm: below the free-space limit, publishers are blocked."""
        monitor = DiskMonitor(str(self.config.data_path), self.config.disk_free_limit)
        while True:
            status = monitor.poll()
            self.broker.set_alarm("disk", status.alarm)
            await asyncio.sleep(status.next_poll_interval())

    async def run_until_signalled(self) -> None:
        """Start, serve until SIGTERM or SIGINT, stop cleanly; a signal during the start (while
        joining a cluster, say) stops the node as cleanly as one later."""
        loop = asyncio.get_running_loop()
        signalled = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, signalled.set)
        starting = loop.create_task(self.start(), name="node-start")
        waiting = loop.create_task(signalled.wait(), name="node-signals")
        try:
            await asyncio.wait({starting, waiting}, return_when=asyncio.FIRST_COMPLETED)
            if starting.done():
                starting.result()  # a StartupError ends the node here
                await waiting
            else:
                log.info("stop requested while the node was starting")
                starting.cancel()
                await asyncio.gather(starting, return_exceptions=True)
        finally:
            waiting.cancel()
            log.info("shutting down")
            await self.stop()


def _check_address(host: str) -> None:
    """StartupError unless listeners can bind `host`: gRPC, which binds first, would only say
    that it could not, and an address this machine does not have would pass for one in use."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, 0, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        with socket.socket(family, kind, proto) as probe:
            probe.bind(address)
    except OSError as error:
        reason = error.strerror or str(error)
        raise StartupError(EX_UNAVAILABLE, f"cannot listen on {host}: {reason}") from None


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
