"""Runs one link per federated queue homed here and upstream, as policies and parameters say.

A queue is federated when its effective policy has `federation-upstream` or
`federation-upstream-set`. Its links run on its home node only, so that in a cluster each link
runs once; they are reconciled whenever a policy or parameter changes, a queue is created, and
every second (which catches deleted queues and queues that moved here).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any

from leveret.queues.classic import ClassicQueue

from .link import FederationLink, WhenDurable, link_id
from .upstreams import UPSTREAM, UPSTREAM_SET, Upstream, upstreams_of

if TYPE_CHECKING:
    from leveret.broker import Broker

log = logging.getLogger(__name__)

_SWEEP_SECONDS = 1.0

LinkKey = tuple[str, str, str]  # vhost, queue, upstream


class FederationSupervisor:
    """The links of this node's federated queues."""

    def __init__(self, broker: Broker) -> None:
        self._broker = broker
        self.links: dict[LinkKey, FederationLink] = {}
        self._task: asyncio.Task[None] | None = None
        self._wakeup = asyncio.Event()

    def start(self) -> None:
        self._broker.registry.subscribe(self._definitions_changed)
        self._broker.alarm_listeners.append(self._alarm_changed)
        self._task = asyncio.get_running_loop().create_task(
            self._reconcile_forever(), name="federation-links"
        )

    async def stop(self) -> None:
        with contextlib.suppress(ValueError):
            self._broker.alarm_listeners.remove(self._alarm_changed)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        links, self.links = list(self.links.values()), {}
        await asyncio.gather(*(link.stop() for link in links), return_exceptions=True)

    def restart(self, vhost: str, link: str) -> bool:
        """Reconnect the link with id `link` in `vhost`; False when there is none."""
        for (link_vhost, queue, upstream), running in self.links.items():
            if link_vhost == vhost and link_id(vhost, queue, upstream) == link:
                running.restart()
                return True
        return False

    def _definitions_changed(self, what: str, vhost: str) -> None:
        self._wakeup.set()

    def _alarm_changed(self, alarmed: bool) -> None:
        for link in self.links.values():
            link.demand_may_have_changed(link.queue)

    async def _reconcile_forever(self) -> None:
        while True:
            try:
                await self._reconcile()
            except Exception:
                log.exception("federation links could not be reconciled")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), _SWEEP_SECONDS)
            self._wakeup.clear()

    async def _reconcile(self) -> None:
        wanted: dict[LinkKey, tuple[ClassicQueue, Upstream, str]] = {}
        for vhost in list(self._broker.vhosts.values()):
            for queue in list(vhost.queues.values()):
                if queue.policy is None or queue.deleted:
                    continue
                found = self._upstreams(queue)
                if found is None:
                    continue
                policy, upstreams = found
                for upstream in upstreams:
                    wanted[(queue.vhost, queue.name, upstream.name)] = (queue, upstream, policy)
        for key, link in list(self.links.items()):
            want = wanted.get(key)
            if want is None or want[0] is not link.queue or want[1] != link.upstream:
                del self.links[key]
                await link.stop()
        for key, (queue, upstream, policy) in wanted.items():
            if key not in self.links:
                link = FederationLink(
                    queue,
                    upstream,
                    policy,
                    self._when_durable(),
                    self._broker.config.node_name,
                    alarmed=lambda: bool(self._broker.alarms),
                )
                self.links[key] = link
                link.start()

    def _upstreams(self, queue: ClassicQueue) -> tuple[str, list[Upstream]] | None:
        registry = self._broker.registry
        policy = registry.effective_policy("policy", queue.vhost, "queue", queue.name)
        if policy is None:
            return None
        definition = policy.definition
        if UPSTREAM not in definition and UPSTREAM_SET not in definition:
            return None
        upstreams = {
            p.name: p.value
            for p in registry.parameters(UPSTREAM, queue.vhost)
            if isinstance(p.value, dict)
        }
        sets = {p.name: p.value for p in registry.parameters(UPSTREAM_SET, queue.vhost)}
        return policy.name, upstreams_of(definition, upstreams, sets)

    def _when_durable(self) -> WhenDurable:
        stores = self._broker.stores
        if stores is None:
            return lambda callback: callback(None)
        return stores.committer.call_when_durable

    def describe(self) -> list[dict[str, Any]]:
        return [link.describe() for link in self.links.values() if not link.is_this_queue]
