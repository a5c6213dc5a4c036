"""SIGKILL a process that is publishing with group commit, again and again in the same
directory: everything it reported durable is recovered exactly once, in order, intact."""

from __future__ import annotations

import os
import random
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .crash_writer import QUEUES, body_of, open_vhost

REPO = Path(__file__).resolve().parents[2]
SLOW = os.environ.get("LEVERET_SLOW") == "1"


def _run_until_killed(directory: Path, seed: int, confirmations: int) -> list[str]:
    """Starts the writer, SIGKILLs it once it reported `confirmations` durable messages (or
    after 20 s), and returns every line it wrote before dying."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.store.crash_writer", str(directory), str(seed)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert process.stdout is not None
    received = bytearray()
    deadline = time.monotonic() + 20
    try:
        while received.count(b"C ") < confirmations and time.monotonic() < deadline:
            ready, _, _ = select.select([process.stdout], [], [], 0.5)
            if ready:
                chunk = os.read(process.stdout.fileno(), 65536)
                if not chunk:
                    break
                received += chunk
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
    received += process.stdout.read()
    process.stdout.close()
    assert process.returncode == -signal.SIGKILL, "the writer died before it was killed"
    # A line cut by the kill was never completely reported, so it promises nothing.
    return received.decode().splitlines()[: received.count(b"\n")]


def _check_round(
    directory: Path,
    expected: dict[str, set[int]],
    acked: dict[str, set[int]],
) -> None:
    shared, stores = open_vhost(str(directory))
    try:
        for name, store in stores.items():
            messages = store.read_messages(None, 10**7).messages
            seqs = [message.seq for message in messages]
            assert len(seqs) == len(set(seqs)), f"{name}: duplicates"
            assert seqs == sorted(seqs), f"{name}: order"
            missing = expected[name] - set(seqs)
            assert not missing, f"{name}: confirmed messages lost: {sorted(missing)[:10]}"
            for message in messages:
                assert message.body == body_of(message.seq), f"{name}: seq {message.seq}"
                assert message.header_payload == b"header"
                if message.seq in acked[name]:
                    assert message.redelivered, f"{name}: acked {message.seq} back, not redelivered"
            assert store.message_count == len(seqs)
            # What is still there and was never acked must stay for the next round.
            expected[name] = (expected[name] | set(seqs)) - acked[name]
    finally:
        for store in stores.values():
            store.close()
        shared.close()


def _crash_rounds(directory: Path, rounds: int, seed: int) -> None:
    randomness = random.Random(seed)
    expected: dict[str, set[int]] = {name: set() for name in QUEUES}
    acked: dict[str, set[int]] = {name: set() for name in QUEUES}
    for round_number in range(rounds):
        lines = _run_until_killed(
            directory, seed * 1000 + round_number, randomness.randint(1, 1500)
        )
        for line in lines:
            kind, name, seq_text = line.split()
            seq = int(seq_text)
            if kind == "C":
                expected[name].add(seq)
            else:
                acked[name].add(seq)
                expected[name].discard(seq)
        _check_round(directory, expected, acked)


def test_sigkill_during_group_commit_loses_nothing_confirmed(tmp_path: Path) -> None:
    _crash_rounds(tmp_path, 3, seed=1)


@pytest.mark.slow
@pytest.mark.slow
def test_sigkill_loop_fifty_rounds(tmp_path: Path) -> None:
    _crash_rounds(tmp_path, 50, seed=2)
