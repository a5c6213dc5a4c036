"""A running node: the broker, its listeners, the ports file, and a clean shutdown."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
from pathlib import Path

from ..broker import Broker
from ..config import Config
from .memory_monitor import MemoryMonitor
from .placeholder_listener import start_placeholder
from .protocol import AMQPProtocol

log = logging.getLogger(__name__)


class Node:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.broker = Broker(config)
        self.ports: dict[str, int] = {}
        self._servers: list[asyncio.AbstractServer] = []
        self._monitor: MemoryMonitor | None = None
        self._stopped = asyncio.Event()

    async def start(self) -> None:
        config = self.config
        config.data_path.mkdir(parents=True, exist_ok=True)
        loop = asyncio.get_running_loop()
        amqp = await loop.create_server(
            lambda: AMQPProtocol(self.broker), config.bind, config.amqp_port, reuse_address=True, backlog=1024
        )
        self._servers.append(amqp)
        self.ports["amqp"] = amqp.sockets[0].getsockname()[1]
        # Management and cluster ports are taken now so tools can rely on them; their services
        # are plugged in by the management and cluster layers.
        for name, port in (("mgmt", config.mgmt_port), ("cluster", config.cluster_port)):
            server = await start_placeholder(config.bind, port)
            self._servers.append(server)
            self.ports[name] = server.sockets[0].getsockname()[1]
        if config.memory_high_watermark:
            self._monitor = MemoryMonitor(self.broker, config.memory_high_watermark)
            self._monitor.start()
        log.info("node %s accepting AMQP connections on port %d", config.node_name, self.ports["amqp"])
        if config.ports_file:
            _write_atomically(Path(config.ports_file), json.dumps(self.ports))

    async def stop(self) -> None:
        if self._monitor is not None:
            self._monitor.stop()
        for server in self._servers:
            server.close()
        for session in list(self.broker.sessions):
            session.close_for_shutdown()
        for server in self._servers:
            await server.wait_closed()
        self._stopped.set()

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
