"""Leveret nodes for tests: in-process (a thread with its own loop) or as a real subprocess."""

from __future__ import annotations

import asyncio
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

from leveret.auth import hash_password
from leveret.clustering.plugin import ClusterPlugin
from leveret.config import Config
from leveret.server.node import Node
from leveret.testing.process import LeveretProcess
from proto.metadata_schema import PutUser, SetPermissions

T = TypeVar("T")
REPO = Path(__file__).resolve().parents[2]


def wait_for(predicate: Callable[[], Any], timeout: float = 10.0, interval: float = 0.01) -> Any:
    """Poll until predicate() is truthy; fail with a clear message after timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s: {predicate}")
        time.sleep(interval)


class InProcessNode:
    """A node on 127.0.0.1:0 whose broker the test can inspect through `call`."""

    def __init__(self, **config: Any) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="leveret-test-")
        defaults = {
            # A fixed name, so that tests can expect it whatever the machine's hostname.
            "node_name": "leveret@localhost",
            "bind": "127.0.0.1",
            "amqp_port": 0,
            "mgmt_port": 0,
            "cluster_port": 0,
            "data_dir": self._tmp.name,
        }
        defaults.update(config)
        self.config = Config(**defaults)
        self.loop = asyncio.new_event_loop()
        self.node = Node(self.config, clustering=ClusterPlugin)
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()
        try:
            self._submit(self.node.start()).result(10)
        except BaseException:
            self.stop()  # a node that fails to start leaves no loop polling its removed data
            raise
        self.port = self.node.ports["amqp"]
        self.url = f"amqp://guest:guest@127.0.0.1:{self.port}/"

    @property
    def broker(self) -> Any:
        return self.node.broker

    def _submit(self, coro: Any) -> Future[Any]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def add_user(
        self, name: str, password: str, permissions: tuple[str, str, str] = (".*", ".*", ".*")
    ) -> None:
        """A user with `permissions` (configure, write, read) in vhost "/", as the management
        API would make it: decided by the node's metadata store."""
        configure, write, read = permissions
        for command in (
            PutUser(name=name, password_hash=hash_password(password)),
            SetPermissions(user=name, vhost="/", configure=configure, write=write, read=read),
        ):
            self._submit(self.broker.metadata.submit(command)).result(10)

    def call(self, fn: Callable[[], T]) -> T:
        """Run fn on the node's loop and return its result."""

        async def run() -> T:
            return fn()

        return self._submit(run()).result(10)

    def stop(self) -> None:
        try:
            self._submit(self.node.stop()).result(30)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(10)
            self.loop.close()
            self._tmp.cleanup()


# The test suite's name for a node process: the one the package ships for users' tests.
NodeProcess = LeveretProcess
