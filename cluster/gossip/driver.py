"""Runs the SWIM core over the cluster's gRPC channels: one probe per protocol period."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine, Iterable
from typing import Any

import grpc

from cluster.address_book import AddressBook
from cluster.gossip.report import NodeReport
from cluster.gossip.swim import MemberStatus, MemberView, Swim
from cluster.gossip.wire import decode_states, encode_states
from cluster.secret import Caller
from cluster.transport import PeerChannels
from proto import gossip_pb2

log = logging.getLogger(__name__)

ReportSource = Callable[[], NodeReport]
# Told the resources in alarm on the other running members each time that set changes.
AlarmsListener = Callable[[frozenset[str]], None]


class GossipDriver:
    """Probes members, answers their probes, and keeps this node's report current."""

    def __init__(
        self,
        swim: Swim,
        channels: PeerChannels,
        book: AddressBook,
        report_source: ReportSource | None = None,
        clock: Callable[[], float] = time.monotonic,
        on_peer_alarms: AlarmsListener | None = None,
    ) -> None:
        self._swim = swim
        self._on_peer_alarms = on_peer_alarms
        self._peer_alarms: frozenset[str] = frozenset()
        self._channels = channels
        self._book = book
        self._report_source = report_source
        self._clock = clock
        self._seq = 0
        self._task: asyncio.Task[None] | None = None
        self._probes: set[asyncio.Task[Any]] = set()

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="gossip")
        self.announce()  # a node that starts (perhaps with an alarm) tells every member at once

    async def stop(self) -> None:
        tasks = [task for task in (self._task, *self._probes) if task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._task = None
        self._probes.clear()

    def set_members(self, names: Iterable[str]) -> None:
        """The members to watch (the replicated members table)."""
        self._swim.set_members(names, self._clock())

    def view(self) -> dict[str, MemberView]:
        """This node's belief about every member."""
        return self._swim.view()

    # -- answering peers -----------------------------------------------------------------

    def on_ping(self, caller: Caller, ping: gossip_pb2.Ping) -> gossip_pb2.Ack:
        """A peer probes us: take its news, answer with ours."""
        if not self._swim.is_member(caller.node):
            return gossip_pb2.Ack()  # a node outside the cluster learns nothing from us
        self._merge(ping.updates)
        return gossip_pb2.Ack(reached=True, updates=encode_states(self._swim.outgoing(caller.node)))

    async def on_ping_req(self, caller: Caller, request: gossip_pb2.PingReq) -> gossip_pb2.Ack:
        """A peer asks us to probe `request.target` for it."""
        if not self._swim.is_member(caller.node):
            return gossip_pb2.Ack()
        self._merge(request.updates)
        reached = await self._ping(request.target)
        return gossip_pb2.Ack(
            reached=reached, updates=encode_states(self._swim.outgoing(caller.node))
        )

    # -- probing -------------------------------------------------------------------------

    def announce(self) -> None:
        """This node's report changed in a way the others must hear of at once (an alarm, which
        blocks their publishers): it goes to every member now rather than with the probes, which
        reach a given member only every few periods."""
        if self._task is None:
            return  # not running (stopped, or not started yet: start() announces)
        self._refresh_report()
        for member in self._swim.view():
            if member != self._swim.own_name:
                self._spawn(self._ping(member))

    async def _run(self) -> None:
        period = self._swim.config.protocol_period
        while True:
            await asyncio.sleep(period)
            self._refresh_report()
            self._swim.expire(self._clock())
            self._took_news()  # (a member that died takes its alarms with it)
            target = self._swim.next_target()
            if target is not None:
                self._spawn(self._probe(target))

    def _refresh_report(self) -> None:
        if self._report_source is not None:
            try:
                self._swim.set_report(self._report_source(), self._clock())
            except Exception:  # a broken report must not stop failure detection
                log.exception("cannot build this node's gossip report")

    def _spawn(self, work: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._probes.add(task)
        task.add_done_callback(self._probes.discard)

    def _merge(self, updates: Iterable[gossip_pb2.MemberState]) -> None:
        """Take in what a peer said, and any change of the others' alarms it brought."""
        self._swim.receive(decode_states(updates), self._clock())
        self._took_news()

    def _took_news(self) -> None:
        """Tell the listener when the other running members' alarms are no longer what they were."""
        if self._on_peer_alarms is None:
            return
        alarms = frozenset(
            alarm
            for name, view in self._swim.view().items()
            if name != self._swim.own_name
            and view.status is not MemberStatus.DEAD
            and view.report is not None
            for alarm in view.report.alarms
        )
        if alarms != self._peer_alarms:
            self._peer_alarms = alarms
            self._on_peer_alarms(alarms)

    async def _probe(self, target: str) -> None:
        if await self._ping(target):
            return
        helpers = self._swim.helpers(target)
        answers = await asyncio.gather(*(self._ping_via(helper, target) for helper in helpers))
        if not any(answers):
            self._swim.probe_failed(target, self._clock())

    async def _ping(self, target: str) -> bool:
        address = self._book.get(target)
        if address is None:
            return False
        self._seq += 1
        request = gossip_pb2.Ping(seq=self._seq, updates=encode_states(self._swim.outgoing(target)))
        try:
            ack = await self._channels.call(
                address, "Ping", request, timeout=self._swim.config.ping_timeout
            )
        except grpc.aio.AioRpcError:
            return False
        self._merge(ack.updates)
        return bool(ack.reached)

    async def _ping_via(self, helper: str, target: str) -> bool:
        address = self._book.get(helper)
        if address is None:
            return False
        self._seq += 1
        request = gossip_pb2.PingReq(
            target=target, seq=self._seq, updates=encode_states(self._swim.outgoing(helper))
        )
        try:
            ack = await self._channels.call(
                address, "PingReq", request, timeout=2 * self._swim.config.ping_timeout + 0.2
            )
        except grpc.aio.AioRpcError:
            return False
        self._merge(ack.updates)
        return bool(ack.reached)
