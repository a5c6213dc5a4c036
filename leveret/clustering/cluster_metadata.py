"""The core's metadata store (leveret.metadata), backed by the cluster's Raft-replicated one."""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable
from typing import Any

from cluster.errors import ClusterError
from cluster.gossip.swim import MemberStatus
from cluster.service import ClusterService
from leveret.metadata import MetadataUnavailable
from leveret.names import RUN_ID
from proto.metadata_schema import Command

log = logging.getLogger(__name__)

# How long a background submission waits before trying again when the cluster cannot decide.
_RETRY_SECONDS = 1.0


class ClusterMetadata:
    """Submits the core's definition changes through the cluster service."""

    def __init__(self, service: ClusterService) -> None:
        self._service = service
        self._eventual: deque[Command] = deque()
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def node_name(self) -> str:
        return self._service.name

    def running_nodes(self) -> dict[str, str]:
        status = self._service.status()
        running = {status.node: RUN_ID}
        for name in status.known_nodes:
            view = status.gossip.get(name)
            if (
                view is not None
                and view.status is MemberStatus.ALIVE
                and view.report is not None
                and view.report.run
            ):
                running[name] = view.report.run
        return running

    async def submit(self, command: Command) -> dict[str, Any]:
        try:
            return await self._service.submit(command)
        except ClusterError as error:
            raise MetadataUnavailable(str(error)) from None

    @property
    def applied_index(self) -> int:
        return self._service.applied_index

    def wait_applied(self, index: int) -> Awaitable[None]:
        return self._service.wait_applied(index)

    @property
    def may_lag(self) -> bool:
        return not self._service.alone

    async def catch_up(self) -> None:
        try:
            await self._service.read_barrier()
        except ClusterError as error:
            raise MetadataUnavailable(str(error)) from None

    def submit_eventually(self, command: Command) -> None:
        self._eventual.append(command)
        self._wakeup.set()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._submit_in_background(), name="cluster-eventual-submits"
            )

    async def stop(self) -> None:
        """Stop retrying (what is left is retried by the next run's recovery, at boot)."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _submit_in_background(self) -> None:
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            while self._eventual:
                command = self._eventual[0]
                try:
                    await self._service.submit(command)
                except ClusterError as error:
                    log.info("will retry %s: %s", command.op, error)
                    await asyncio.sleep(_RETRY_SECONDS)
                    continue
                self._eventual.popleft()
