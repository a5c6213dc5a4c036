"""Worker processes of the load generator: each runs producers and consumers on its own loop."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import Any, Protocol

from bench.client import run
from bench.roles import Consumer, Producer, RoleReport, RoleSettings


class _Signal(Protocol):
    def wait(self, timeout: float | None = ...) -> bool: ...


class _Queue(Protocol):
    def put(self, item: Any) -> None: ...


class _SharedInt(Protocol):
    value: int


@dataclasses.dataclass(frozen=True)
class WorkerPlan:
    """The roles one worker process runs, and how it meets the others at the start line."""

    worker: int
    roles: tuple[tuple[str, int], ...]  # ("producer" | "consumer", index)
    settings: RoleSettings
    measure_from_second: int
    ready_timeout: float


def worker_main(
    plan: WorkerPlan,
    ready: _Queue,
    results: _Queue,
    go: _Signal,
    start_ns: _SharedInt,
) -> None:
    """Process entry point: connect every role, report ready, wait for go, run, report results."""
    run(_run_worker(plan, ready, results, go, start_ns))


async def _run_worker(
    plan: WorkerPlan,
    ready: _Queue,
    results: _Queue,
    go: _Signal,
    start_ns: _SharedInt,
) -> None:
    roles: list[Producer | Consumer] = []
    for kind, index in plan.roles:
        name = f"leveret-bench-{kind}-{index}"
        if kind == "producer":
            roles.append(Producer(plan.settings, name))
        else:
            roles.append(Consumer(plan.settings, name, plan.measure_from_second, index))
    try:
        for role in roles:
            await role.prepare()
    except Exception as error:  # noqa: BLE001 - reported to the parent, which stops the run
        ready.put(("error", plan.worker, f"{type(error).__name__}: {error}"))
        return
    ready.put(("ready", plan.worker, ""))
    # Blocking on the start signal in a thread keeps the loop free, though nothing flows yet.
    started = await asyncio.get_running_loop().run_in_executor(None, go.wait, plan.ready_timeout)
    if not started:
        return
    cpu_before = time.process_time()
    outcomes = await asyncio.gather(
        *(role.run(start_ns.value) for role in roles), return_exceptions=True
    )
    cpu_seconds = time.process_time() - cpu_before
    reports: list[dict[str, Any]] = []
    for role, outcome in zip(roles, outcomes, strict=True):
        if isinstance(outcome, RoleReport):
            reports.append(dataclasses.asdict(outcome))
        else:
            failed = role.report
            failed.error = f"{type(outcome).__name__}: {outcome}"
            reports.append(dataclasses.asdict(failed))
    results.put({"worker": plan.worker, "cpu_seconds": cpu_seconds, "reports": reports})
