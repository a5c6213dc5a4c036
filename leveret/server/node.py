"""A running node: the broker, its listeners, the ports file, and a clean shutdown."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
from pathlib import Path

from cluster.plugin import ClusterPlugin

from ..broker import Broker
from ..config import Config
from ..definitions_log import DefinitionsLog
from ..mgmt import start_management
from ..persistence import MessageStores
from ..store import DiskMonitor
from .memory_monitor import MemoryMonitor
from .protocol import AMQPProtocol

log = logging.getLogger(__name__)


class Node:
    def __init__(self, config: Config) -> None:
        self.config = config
        config.data_path.mkdir(parents=True, exist_ok=True)
        self.definitions = DefinitionsLog(config.data_path)
        self.stores = MessageStores(config.data_path)
        self.broker = Broker(config, definitions=self.definitions, stores=self.stores)
        self.ports: dict[str, int] = {}
        self._servers: list[asyncio.Server] = []
        self._monitor: MemoryMonitor | None = None
        self._disk_task: asyncio.Task[None] | None = None
        self.cluster: ClusterPlugin | None = None

    async def start(self) -> None:
        config = self.config
        # The definitions come from this node's journal while it runs alone, from the cluster's
        # replicated store once it belongs to a cluster (which the cluster plugin knows).
        self.cluster = ClusterPlugin(config, self.broker)
        if not self.cluster.shares_definitions:
            self.broker.recover()
        await self.cluster.start()
        self.ports["cluster"] = self.cluster.port
        self._disk_task = asyncio.get_running_loop().create_task(self._watch_disk())
        loop = asyncio.get_running_loop()
        amqp = await loop.create_server(
            lambda: AMQPProtocol(self.broker),
            config.bind,
            config.amqp_port,
            reuse_address=True,
            backlog=1024,
        )
        self._servers.append(amqp)
        self.ports["amqp"] = amqp.sockets[0].getsockname()[1]
        mgmt = await start_management(
            self.broker, config.bind, config.mgmt_port, listeners=self.ports
        )
        self._servers.append(mgmt)  # type: ignore[arg-type]
        self.ports["mgmt"] = mgmt.sockets[0].getsockname()[1]
        if config.memory_high_watermark:
            self._monitor = MemoryMonitor(self.broker, config.memory_high_watermark)
            self._monitor.start()
        log.info(
            "node %s accepting AMQP connections on port %d", config.node_name, self.ports["amqp"]
        )
        if config.ports_file:
            _write_atomically(Path(config.ports_file), json.dumps(self.ports))

    async def stop(self) -> None:
        if self.cluster is not None:  # hands Raft leadership over first
            await self.cluster.stop()
        if self._monitor is not None:
            self._monitor.stop()
        if self._disk_task is not None:
            self._disk_task.cancel()
        for server in self._servers:
            server.close()
        for session in list(self.broker.sessions):
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
        self.definitions.close()

    async def _watch_disk(self) -> None:
        """RabbitMQ's disk alarm: below the free-space limit, publishers are blocked."""
        monitor = DiskMonitor(str(self.config.data_path), self.config.disk_free_limit)
        while True:
            status = monitor.poll()
            self.broker.set_alarm("disk", status.alarm)
            await asyncio.sleep(status.next_poll_interval())

    async def run_until_signalled(self) -> None:
        await self.start()
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        log.info("shutting down")
        await self.stop()


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
