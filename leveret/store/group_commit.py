"""Group commit: writes reach the OS once per event-loop iteration, and one round of fsyncs in a
worker thread makes a whole batch durable before its callbacks (publisher confirms) run."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

from .appender import AppendOnlyFile, SyncTicket
from .errors import StoreClosed, StoreError, StoreWriteError

_log = logging.getLogger(__name__)

DurableCallback = Callable[[BaseException | None], None]
"""Called on the event loop with None once the data is durable, or with the error that kept it
from becoming durable (the broker nacks then)."""


class SyncTarget(Protocol):
    """Something with buffered writes that the committer flushes and fsyncs."""

    @property
    def needs_flush(self) -> bool: ...

    @property
    def needs_sync(self) -> bool: ...

    def flush(self) -> None: ...

    def begin_sync(self) -> SyncTicket | None: ...

    def run_sync(self, ticket: SyncTicket) -> None: ...

    def end_sync(self, ticket: SyncTicket, error: BaseException | None) -> None: ...


@dataclass(frozen=True)
class CommitStatistics:
    batches: int
    fsyncs: int
    callbacks: int
    failed_batches: int
    largest_batch: int


class GroupCommitter:
    """Batches fsyncs for every store of a node.

    Only one batch is in flight at a time, so no file ever has two fsyncs in flight; whatever is
    written while a batch runs goes to the next one, which starts as soon as the running one
    ends. Data written without a callback (acks, delivery marks) is lazily durable: it reaches
    the OS at the end of the loop iteration and is fsynced with the next batch, or after
    `lazy_sync_delay` seconds if no batch comes.
    """

    def __init__(self, *, lazy_sync_delay: float = 0.2, sync_threads: int = 4) -> None:
        self._lazy_sync_delay = lazy_sync_delay
        self._sync_threads = sync_threads
        self._executor: ThreadPoolExecutor | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._dirty: OrderedDict[SyncTarget, None] = OrderedDict()
        self._callbacks: list[DurableCallback] = []
        self._running_callbacks: list[DurableCallback] | None = None
        self._flush_handle: asyncio.Handle | None = None
        self._lazy_timer: asyncio.TimerHandle | None = None
        self._batch_task: asyncio.Task[None] | None = None
        self._failing = False
        self._closed = False
        self._batches = 0
        self._fsyncs = 0
        self._callback_count = 0
        self._failed_batches = 0
        self._largest_batch = 0

    def write(
        self,
        target: AppendOnlyFile,
        record: bytes | bytearray | memoryview,
        on_durable: DurableCallback | None = None,
    ) -> int:
        """Buffers record in target and returns its offset; on_durable runs once it is fsynced."""
        if self._closed:
            raise StoreClosed("the group committer is closed")
        offset = target.append(record)
        self.note_dirty(target)
        if on_durable is not None:
            self.call_when_durable(on_durable)
        return offset

    def note_dirty(self, target: SyncTarget, *, early: bool = False) -> None:
        """Target has buffered data: write it to the OS soon and fsync it with the next batch.

        Early targets are written before the others, so that after a kill -9 a queue record
        never survives without the shared body it points to.
        """
        if self._closed:
            raise StoreClosed("the group committer is closed")
        if early and target not in self._dirty:
            self._dirty[target] = None
            self._dirty.move_to_end(target, last=False)
        else:
            self._dirty[target] = None
        if self._flush_handle is None:
            self._flush_handle = self._event_loop().call_soon(self._flush_to_os)

    def call_when_durable(self, callback: DurableCallback) -> None:
        """Calls back once everything written before this call is durable (or has failed)."""
        if self._closed:
            raise StoreClosed("the group committer is closed")
        loop = self._event_loop()
        if not self._dirty:
            if self._running_callbacks is not None:
                # Everything written so far is in the batch that is being fsynced.
                self._running_callbacks.append(callback)
            else:
                loop.call_soon(self._run_callback, callback, None)
            return
        self._callbacks.append(callback)
        if self._batch_task is None and self._flush_handle is None:
            self._flush_handle = loop.call_soon(self._flush_to_os)

    async def wait_durable(self) -> None:
        """Waits until everything written so far is durable; raises StoreWriteError if not."""
        future: asyncio.Future[None] = self._event_loop().create_future()

        def resolve(error: BaseException | None) -> None:
            if future.done():
                return
            if error is None:
                future.set_result(None)
            else:
                future.set_exception(error)

        self.call_when_durable(resolve)
        await future

    def flush(self) -> None:
        """Hands every buffered write to the OS now, without fsync (for example before deliveries
        are written to sockets, so a kill -9 cannot lose their delivery marks)."""
        for target in list(self._dirty):
            # A failure is reported to the callbacks of the next batch.
            with contextlib.suppress(StoreError):
                target.flush()

    async def close(self) -> None:
        """Makes everything durable, then stops the worker threads."""
        if self._closed:
            return
        try:
            if self._dirty or self._batch_task is not None:
                await self.wait_durable()
        finally:
            self._closed = True
            for handle in (self._flush_handle, self._lazy_timer):
                if handle is not None:
                    handle.cancel()
            if self._executor is not None:
                self._executor.shutdown(wait=True)

    def statistics(self) -> CommitStatistics:
        return CommitStatistics(
            batches=self._batches,
            fsyncs=self._fsyncs,
            callbacks=self._callback_count,
            failed_batches=self._failed_batches,
            largest_batch=self._largest_batch,
        )

    def _event_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        return self._loop

    def _flush_to_os(self) -> None:
        self._flush_handle = None
        if self._batch_task is None and self._callbacks:
            self._start_batch()  # (which hands everything to the OS first)
            return
        self.flush()
        if self._batch_task is None and self._dirty and self._lazy_timer is None:
            self._lazy_timer = self._event_loop().call_later(
                self._lazy_sync_delay, self._start_lazy_batch
            )

    def _start_lazy_batch(self) -> None:
        self._lazy_timer = None
        if self._batch_task is None and self._dirty:
            self._start_batch()

    def _start_batch(self) -> None:
        if self._lazy_timer is not None:
            self._lazy_timer.cancel()
            self._lazy_timer = None
        # What the batch takes goes to the OS now, not when its task first runs: a `flush()`
        # in between (before a client write) no longer sees it, and the client would get
        # deliveries whose marks a kill -9 could still lose.
        self.flush()
        callbacks, self._callbacks = self._callbacks, []
        targets = list(self._dirty)
        self._dirty.clear()
        self._running_callbacks = callbacks
        self._batch_task = self._event_loop().create_task(self._run_batch(targets, callbacks))

    async def _run_batch(self, targets: list[SyncTarget], callbacks: list[DurableCallback]) -> None:
        error: BaseException | None = None
        try:
            for target in targets:
                try:
                    target.flush()
                except StoreError as flush_error:
                    error = error or flush_error
            tickets = [(target, target.begin_sync()) for target in targets]
            started = [(target, ticket) for target, ticket in tickets if ticket is not None]
            if started:
                if self._executor is None:
                    self._executor = ThreadPoolExecutor(
                        max_workers=self._sync_threads, thread_name_prefix="leveret-fsync"
                    )
                loop = self._event_loop()
                results = await asyncio.gather(
                    *(
                        loop.run_in_executor(self._executor, target.run_sync, ticket)
                        for target, ticket in started
                    ),
                    return_exceptions=True,
                )
                self._fsyncs += len(started)
                for (target, ticket), result in zip(started, results, strict=True):
                    sync_error = result if isinstance(result, BaseException) else None
                    target.end_sync(ticket, sync_error)
                    if sync_error is not None and error is None:
                        error = StoreWriteError(f"fsync failed: {sync_error}")
                        error.__cause__ = sync_error
        except BaseException as unexpected:
            error = unexpected
            raise
        finally:
            # Whatever is still not durable (new writes, failed writes) goes to the next batch.
            for target in targets:
                if target.needs_sync or target.needs_flush:
                    self._dirty[target] = None
            self._batch_task = None
            self._running_callbacks = None
            self._finish_batch(callbacks, error)

    def _finish_batch(self, callbacks: list[DurableCallback], error: BaseException | None) -> None:
        self._batches += 1
        self._largest_batch = max(self._largest_batch, len(callbacks))
        if error is not None:
            self._failed_batches += 1
            if not self._failing:
                _log.error("message store writes are failing: %s", error)
            self._failing = True
        elif self._failing:
            _log.warning("message store writes succeed again")
            self._failing = False
        for callback in callbacks:
            self._run_callback(callback, error)
        if self._closed:
            return
        if self._callbacks:
            self._start_batch()
        elif self._dirty and self._lazy_timer is None:
            self._lazy_timer = self._event_loop().call_later(
                self._lazy_sync_delay, self._start_lazy_batch
            )

    def _run_callback(self, callback: DurableCallback, error: BaseException | None) -> None:
        self._callback_count += 1
        try:
            callback(error)
        except Exception:  # noqa: BLE001 - one broken callback must not starve the others
            _log.exception("durability callback failed")
