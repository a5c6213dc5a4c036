"""Start-up failures: one clear line on stderr and a sysexits code, never a traceback."""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pika
import pytest

from leveret.memory import total_memory
from tests.support.node import REPO, NodeProcess, wait_for

START_TIMEOUT_SECONDS = 30


def run_server(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`leveret server` on free ports that must fail to start: its exit code and output."""
    command = [
        sys.executable, "-m", "leveret", "server", "--bind", "127.0.0.1",
        "--amqp-port", "0", "--mgmt-port", "0", "--cluster-port", "0",
        "--data-dir", str(tmp_path / "data"), *args,
    ]  # fmt: skip
    return subprocess.run(
        command,
        cwd=REPO,
        # As from an operator's shell: not the gRPC settings this test process made for itself.
        env={**{k: v for k, v in os.environ.items() if k != "GRPC_VERBOSITY"}, **(env or {})},
        capture_output=True,
        text=True,
        timeout=START_TIMEOUT_SECONDS,
        check=False,
    )


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("leveret: "), lines[0]
    return lines[0]


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def test_a_second_node_on_the_same_data_dir_is_refused(tmp_path: Path) -> None:
    first = NodeProcess(data_dir=str(tmp_path / "data")).start()
    try:
        result = run_server(tmp_path)
        assert result.returncode == 73
        line = one_line(result)
        assert str(tmp_path / "data") in line and f"PID {first.proc.pid}" in line  # type: ignore[union-attr]
        connection = pika.BlockingConnection(pika.URLParameters(first.url))
        connection.channel().queue_declare("still-served")
        connection.close()
        assert first.terminate() == 0
        second = NodeProcess(data_dir=str(tmp_path / "data")).start()  # the lock went with it
        second.terminate()
        second.cleanup()
    finally:
        first.cleanup()


@pytest.mark.parametrize(
    ("toml", "key", "accepted"),
    [
        ('max_message_size = "lots"', "max_message_size = 'lots'", "an integer number of bytes"),
        ('disk_free_limit = "50XB"', "disk_free_limit = '50XB'", "RabbitMQ's units"),
        ("memory_high_watermark = 1.5", "memory_high_watermark = 1.5", "a fraction of memory"),
        ('log_level = "loud"', "log_level = 'loud'", "debug | info | warning | error"),
        ("amqp_port = 70000", "amqp_port = 70000", "an integer from 0 to 65535"),
        ("colour = 3", "unknown configuration key 'colour'", ""),
    ],
)
def test_a_bad_value_in_the_file_is_refused_naming_key_value_and_source(
    tmp_path: Path, toml: str, key: str, accepted: str
) -> None:
    config = tmp_path / "leveret.toml"
    config.write_text(toml + "\n")
    result = run_server(tmp_path, "--config", str(config))
    assert result.returncode == 78
    line = one_line(result)
    assert key in line and f"file {config}" in line and accepted in line


def test_a_bad_value_from_the_environment_is_refused(tmp_path: Path) -> None:
    result = run_server(tmp_path, env={"LEVERET_AMQP_PORT": "five"})
    assert result.returncode == 78
    assert "environment variable LEVERET_AMQP_PORT" in one_line(result)


def test_a_missing_or_invalid_config_file_is_refused(tmp_path: Path) -> None:
    missing = run_server(tmp_path, "--config", str(tmp_path / "nope.toml"))
    assert missing.returncode == 78 and "cannot read the configuration file" in one_line(missing)
    broken = tmp_path / "broken.toml"
    broken.write_text("amqp_port = \n")
    invalid = run_server(tmp_path, "--config", str(broken))
    assert invalid.returncode == 78 and "is not valid TOML" in one_line(invalid)


def test_an_unusable_data_dir_is_refused(tmp_path: Path) -> None:
    (tmp_path / "data").write_text("a file where the directory should be")
    result = run_server(tmp_path)
    assert result.returncode == 73
    assert "cannot use the data directory" in one_line(result)


def test_a_log_file_that_cannot_be_opened_is_refused(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory")
    result = run_server(tmp_path, "--log-file", str(tmp_path / "file" / "node.log"))
    assert result.returncode == 73
    assert f"cannot open the log file {tmp_path / 'file' / 'node.log'}" in one_line(result)


@pytest.mark.parametrize("flag", ["--amqp-port", "--mgmt-port", "--cluster-port"])
def test_a_port_in_use_is_refused(tmp_path: Path, taken_port: int, flag: str) -> None:
    result = run_server(tmp_path, flag, str(taken_port))
    assert result.returncode == 69
    assert str(taken_port) in one_line(result)


def test_bad_usage_is_one_line_and_exits_64(tmp_path: Path) -> None:
    result = run_server(tmp_path, "--no-such-flag")
    assert result.returncode == 64
    assert "--no-such-flag" in one_line(result)


def test_an_address_that_is_not_one_is_refused(tmp_path: Path) -> None:
    result = run_server(tmp_path, "--bind", "999.1.1.1")
    assert result.returncode == 78
    assert "invalid bind = '999.1.1.1' (from flag --bind)" in one_line(result)


def test_an_address_this_machine_does_not_have_is_not_taken_for_a_port_in_use(
    tmp_path: Path,
) -> None:
    result = run_server(tmp_path, "--bind", "192.0.2.1")  # TEST-NET-1: nobody's address
    assert result.returncode == 69
    line = one_line(result)
    assert "192.0.2.1" in line and "in use" not in line


def test_a_missing_cluster_secret_file_is_refused(tmp_path: Path) -> None:
    result = run_server(tmp_path, "--cluster-secret-file", str(tmp_path / "nope"))
    assert result.returncode == 78
    line = one_line(result)
    assert f"cannot read the cluster secret file {tmp_path / 'nope'}" in line
    assert "Errno" not in line


def test_the_config_file_can_come_from_the_environment(tmp_path: Path) -> None:
    config = tmp_path / "leveret.toml"
    config.write_text("mgmt_port = -1\n")
    result = run_server(tmp_path, env={"LEVERET_CONFIG": str(config)})
    assert result.returncode == 78
    assert f"invalid mgmt_port = -1 (from file {config})" in one_line(result)


def test_with_debug_the_traceback_goes_to_the_log_and_stderr_stays_one_line(
    tmp_path: Path, taken_port: int
) -> None:
    log_file = tmp_path / "node.jsonl"
    result = run_server(
        tmp_path,
        *("--amqp-port", str(taken_port), "--log-level", "debug"),
        *("--log-format", "json", "--log-file", str(log_file)),
    )
    assert result.returncode == 69
    one_line(result)
    entries = [json.loads(line) for line in log_file.read_text().splitlines()]
    failures = [entry for entry in entries if entry["message"] == "the node could not start"]
    assert failures and "Traceback" in failures[0]["exception"]


def test_version_and_help() -> None:
    version = subprocess.run(
        [sys.executable, "-m", "leveret", "--version"], capture_output=True, text=True, check=True
    )
    assert version.stdout.startswith("leveret ")
    help_text = subprocess.run(
        [sys.executable, "-m", "leveret", "server", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for flag in ("--cluster-secret-file", "--log-level", "--log-format", "--log-file", "--join"):
        assert flag in help_text
    assert "LEVERET_AMQP_PORT" in help_text and "5672" in help_text
    assert "LEVERET_JOIN" in help_text and "LEVERET_CONFIG" in help_text
    # Keys without a flag are listed too, each with its default and variable.
    assert "max_message_size" in help_text and "LEVERET_MAX_MESSAGE_SIZE" in help_text
    assert "memory_high_watermark" in help_text and "(default: 0.4;" in help_text


def test_json_logs_to_a_file(tmp_path: Path) -> None:
    log_file = tmp_path / "logs" / "node.jsonl"  # its directory is made on first start
    node = NodeProcess(extra_args=["--log-format", "json", "--log-file", str(log_file)]).start()
    try:
        node.terminate()
    finally:
        node.cleanup()
    entries = [json.loads(line) for line in log_file.read_text().splitlines()]
    assert {"time", "level", "logger", "message"} <= set(entries[0])
    assert any("accepting AMQP connections" in entry["message"] for entry in entries)


def _nodes(node: NodeProcess) -> list[dict[str, object]]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{node.ports['mgmt']}/api/nodes",
        headers={"Authorization": "Basic " + base64.b64encode(b"guest:guest").decode()},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return list(json.load(response))


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        (None, lambda: int(total_memory() * 0.4)),  # RabbitMQ's default: 0.4 of the memory
        ("memory_high_watermark = 0.25", lambda: int(total_memory() * 0.25)),
        ('memory_high_watermark = "1GB"', lambda: 1_000_000_000),
        # A plain number reads the same as text (as from the environment) as in TOML: all of it.
        ('memory_high_watermark = "1"', total_memory),
        ('memory_high_watermark = "1000000GB"', total_memory),  # more than the machine has
    ],
)
def test_the_memory_limit_reported_is_the_one_in_force(
    tmp_path: Path, setting: str | None, expected: Callable[[], int]
) -> None:
    args = []
    if setting is not None:
        config = tmp_path / "leveret.toml"
        config.write_text(setting + "\n")
        args = ["--config", str(config)]
    node = NodeProcess(extra_args=args).start()
    try:
        [entry] = _nodes(node)
        assert entry["mem_limit"] == expected()
        assert entry["mem_alarm"] is False
        # The figure reported is the one the memory monitor was given, not a guess beside it.
        assert f"memory high watermark set to {expected()} bytes" in node.log_tail()
    finally:
        node.terminate()
        node.cleanup()


def test_a_memory_limit_below_the_nodes_use_raises_the_alarm(tmp_path: Path) -> None:
    config = tmp_path / "leveret.toml"
    config.write_text('memory_high_watermark = "1MiB"\n')
    node = NodeProcess(extra_args=["--config", str(config)]).start()
    try:
        wait_for(lambda: _nodes(node)[0]["mem_alarm"] is True, 10, 0.1)
    finally:
        node.terminate()
        node.cleanup()


def test_a_bare_node_name_gets_this_machines_host_name(tmp_path: Path) -> None:
    node = NodeProcess(extra_args=["--node-name", "solo"]).start()
    try:
        [entry] = _nodes(node)
        assert entry["name"] == "solo@" + socket.gethostname().split(".")[0]
    finally:
        node.terminate()
        node.cleanup()


def test_sigterm_while_joining_stops_cleanly(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        nobody = probe.getsockname()[1]  # closed once the block ends: no node answers there
    log_path = tmp_path / "node.log"
    command = [
        sys.executable, "-m", "leveret", "server", "--bind", "127.0.0.1",
        "--amqp-port", "0", "--mgmt-port", "0", "--cluster-port", "0",
        "--data-dir", str(tmp_path / "data"), "--join", f"127.0.0.1:{nobody}",
    ]  # fmt: skip
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: b"cannot join the cluster yet" in log_path.read_bytes(), 20, 0.05)
        process.send_signal(signal.SIGTERM)
        assert process.wait(15) == 0, log_path.read_text()
        assert "stop requested while the node was starting" in log_path.read_text()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
