"""Recovering and paging through a large queue keeps memory bounded: bodies are never all in
RAM, whatever the queue's length (100,000 messages by default, 1,000,000 in slow mode)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SLOW = os.environ.get("LEVERET_SLOW") == "1"


def _probe(*arguments: str) -> str:
    completed = subprocess.run(
        [sys.executable, "-m", "tests.store.memory_probe", *arguments],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return completed.stdout


def _recover_and_measure(directory: Path, count: int, segment_size: int) -> tuple[int, int]:
    _probe("write", str(directory), str(count), str(segment_size))
    data_bytes = sum(entry.stat().st_size for entry in directory.iterdir())
    report = json.loads(_probe("recover", str(directory), "0", str(segment_size)))
    assert report["entries"] == count
    assert report["paged"] == count
    assert report["count"] == 0
    return (report["peak_kib"] - report["baseline_kib"]) * 1024, data_bytes


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
def test_recovering_100k_messages_keeps_rss_bounded(tmp_path: Path) -> None:
    growth, data_bytes = _recover_and_measure(tmp_path, 100_000, 2 * 1024 * 1024)
    # Recovery holds one segment (2 MiB here) at a time; the store is about 16 MB.
    assert data_bytes > 12_000_000
    assert growth < 8_000_000, f"peak RSS grew {growth} bytes for {data_bytes} bytes of data"


@pytest.mark.slow
@pytest.mark.slow
def test_recovering_a_million_messages_keeps_rss_bounded(tmp_path: Path) -> None:
    growth, data_bytes = _recover_and_measure(tmp_path, 1_000_000, 16 * 1024 * 1024)
    assert data_bytes > 120_000_000
    assert growth < 48_000_000, f"peak RSS grew {growth} bytes for {data_bytes} bytes of data"
