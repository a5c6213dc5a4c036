"""Run the load generator (bench.perftest) as a subprocess pinned to its core; its JSON result."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

from bench.brokers import REPO_ROOT

_GRACE_S = 120  # setup, teardown and result collection beyond the generator's own seconds


def run_generator(
    url: str, perftest_args: Sequence[str], seconds: int, warmup: int, cpu: int | None
) -> dict[str, Any]:
    """`perftest --uri url ARGS --time seconds --warmup warmup`, bounded in time."""
    argv = [
        *(["taskset", "-c", str(cpu)] if cpu is not None else []),
        sys.executable,
        "-m",
        "bench.perftest",
        "--uri",
        url,
        *perftest_args,
        "--time",
        str(seconds),
        "--warmup",
        str(warmup),
    ]
    completed = subprocess.run(
        argv,
        check=False,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=seconds + warmup + _GRACE_S,
    )
    if not completed.stdout.strip():
        raise RuntimeError(f"perftest failed ({completed.returncode}):\n{completed.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(completed.stdout)
    return result
