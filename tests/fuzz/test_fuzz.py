"""Short fuzzing runs in the normal suite, long ones under LEVERET_SLOW=1 (or `make fuzz`), and
a sample of fuzzed inputs sent to a real node over sockets."""

from __future__ import annotations

import os
import random
import re
import socket
import subprocess
import sys
from pathlib import Path

import pika
import pytest

from tests.fuzz.oracle import compare_header, compare_method
from tests.fuzz.seeds import seed_inputs, transcripts
from tests.fuzz.streams import chunks, frames
from tests.hostile.clients import rss_bytes
from tests.support.node import REPO, NodeProcess

# The long run's size: at least ten million inputs for the parser.
LONG_RUNS = int(os.environ.get("LEVERET_FUZZ_RUNS", "10000000"))


def _fuzz(target: str, runs: int, tmp_path: Path, timeout: float) -> int:
    """Run the fuzzer in a process of its own; the number of inputs it ran."""
    # libFuzzer ends its process without Python's cleanup: run.py fuzzes in a child and
    # removes what it left in the temporary directory.
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.fuzz.run",
            target,
            "--runs",
            str(runs),
            "--seed",
            "1",
            "--corpus",
            str(tmp_path / "corpus"),
            "--artifacts",
            str(tmp_path / "artifacts"),
        ],
        cwd=REPO,
        env={**os.environ, "TMPDIR": str(scratch)},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert list(scratch.iterdir()) == []
    done = re.search(r"Done (\d+) runs", result.stderr)
    assert done is not None, result.stderr[-2000:]
    return int(done.group(1))


def test_recorded_transcripts_decode_alike_here_and_in_pamqp() -> None:
    compared = 0
    for transcript in transcripts().values():
        for kind, _, payload in frames(transcript):
            if kind == 1:
                assert compare_method(payload) == "both"
                compared += 1
            elif kind == 2:
                assert compare_header(payload) == "both"
    assert compared > 50


def test_parser_short_run(tmp_path: Path) -> None:
    assert _fuzz("parser", 5000, tmp_path, timeout=240) == 5000


def test_node_short_run(tmp_path: Path) -> None:
    assert _fuzz("node", 2000, tmp_path, timeout=240) == 2000


@pytest.mark.slow
@pytest.mark.timeout(6 * 3600)
def test_parser_long_run(tmp_path: Path) -> None:
    assert _fuzz("parser", LONG_RUNS, tmp_path, timeout=6 * 3600) == LONG_RUNS


@pytest.mark.slow
@pytest.mark.timeout(6 * 3600)
def test_node_long_run(tmp_path: Path) -> None:
    runs = LONG_RUNS // 10
    assert _fuzz("node", runs, tmp_path, timeout=6 * 3600) == runs


def _mutated_sample(count: int) -> list[bytes]:
    """Seeds with a few bytes changed, deterministically."""
    seeds = list(seed_inputs().values())
    rng = random.Random(20261125)
    sample = []
    for _ in range(count):
        data = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(1, len(data))] = rng.randrange(256)
        sample.append(bytes(data))
    return sample


def test_a_sample_of_fuzzed_inputs_over_sockets_leaves_the_node_serving() -> None:
    with NodeProcess() as node:
        pid = node.proc.pid  # type: ignore[union-attr]
        idle_rss = rss_bytes(pid)
        for data in _mutated_sample(300):
            with socket.create_connection(("127.0.0.1", node.ports["amqp"]), timeout=5) as sock:
                try:
                    for chunk in chunks(data):
                        sock.sendall(chunk)
                except OSError:
                    pass  # the node closed it: what a hostile client gets
        conn = pika.BlockingConnection(pika.URLParameters(node.url))
        channel = conn.channel()
        channel.queue_declare("after-fuzz", auto_delete=True)
        channel.basic_publish("", "after-fuzz", b"ok")
        assert channel.basic_get("after-fuzz", auto_ack=True)[2] == b"ok"
        conn.close()
        assert node.proc.poll() is None  # type: ignore[union-attr]
        assert rss_bytes(pid) < idle_rss + 100 * 1024 * 1024
        log = node.log_tail(100000)
        assert "Traceback" not in log and "Fatal error" not in log, log[-3000:]
