"""Start the brokers under test, each pinned to one core, and describe them for the results."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Protocol

from tests.support.rabbitmq import RabbitNode, die_with_parent, find_rabbitmq, start_rabbitmq

REPO_ROOT = Path(__file__).resolve().parent.parent
_POLL_INTERVAL = 0.02  # short: the restart measurement waits on the ports file


class BrokerStartError(RuntimeError):
    """The broker under test did not come up; the message carries its log tail."""


class BrokerUnderTest(Protocol):
    """A running broker: where to connect, the process group whose cost is measured, and a restart
    in two halves (stop_server, then start_server on the same data) so that each can be timed."""

    name: str

    @property
    def url(self) -> str: ...

    @property
    def process_group(self) -> int: ...

    @property
    def mgmt_port(self) -> int | None:
        """The management HTTP API's port (None when it is off)."""

    def stop_server(self) -> None: ...

    def start_server(self) -> None:
        """Start again on the same data; returns once the broker accepts AMQP connections."""


def default_leveret_command() -> list[str]:
    return [sys.executable, "-m", "leveret", "server"]


def _pin(cpu: int | None) -> list[str]:
    return ["taskset", "-c", str(cpu)] if cpu is not None else []


class _RabbitBroker:
    name = "rabbitmq"

    def __init__(self, node: RabbitNode) -> None:
        self._node = node

    @property
    def url(self) -> str:
        return self._node.url

    @property
    def process_group(self) -> int:
        return self._node.pid

    @property
    def mgmt_port(self) -> int | None:
        return self._node.mgmt_port

    def stop_server(self) -> None:
        self._node.stop_server()

    def start_server(self) -> None:
        self._node.start_server()


@contextmanager
def running_rabbitmq(
    cpu: int | None,
    management: bool = False,
    plugins: Sequence[str] = (),
    extra_config: Sequence[str] = (),
) -> Iterator[BrokerUnderTest]:
    """RabbitMQ on its own ports, pinned to `cpu` with one scheduler (`+S 1:1`), with the
    management API, `plugins` (e.g. rabbitmq_federation) and rabbitmq.conf lines when asked."""
    if find_rabbitmq() is None:
        raise BrokerStartError(
            "rabbitmq-server is not installed (Debian: apt-get install rabbitmq-server)"
        )
    with start_rabbitmq(
        cpu=cpu,
        scheduler_one=True,
        management=management,
        plugins=plugins,
        extra_config=extra_config,
    ) as node:
        yield _RabbitBroker(node)


def _read_ports(ports_file: Path) -> dict[str, int] | None:
    try:
        ports = json.loads(ports_file.read_text())
    except (OSError, ValueError):
        return None  # not written yet, or caught half-written
    return ports if isinstance(ports, dict) and "amqp" in ports else None


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _stop_process(process: subprocess.Popen[bytes], timeout: float) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        with suppress(subprocess.TimeoutExpired):
            process.wait(timeout=timeout)
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)  # leftovers of the group we created
    if process.poll() is None:
        process.wait(timeout=timeout)


class _LeveretBroker:
    """A Leveret node process in its own session; started again on the same data directory."""

    name = "leveret"

    def __init__(self, argv: list[str], ports_file: Path, log_file: Path, timeout: float) -> None:
        self._argv = argv
        self._ports_file = ports_file
        self._log_file = log_file
        self._timeout = timeout
        self._process: subprocess.Popen[bytes] | None = None
        self._ports: dict[str, int] = {}

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self._ports.get('amqp', 0)}/"

    @property
    def mgmt_port(self) -> int | None:
        return self._ports.get("mgmt")

    @property
    def ports(self) -> dict[str, int]:
        """The node's ports file: amqp, amqps (with TLS), mgmt, cluster, data."""
        return dict(self._ports)

    @property
    def process_group(self) -> int:
        assert self._process is not None
        return self._process.pid

    def start_server(self) -> None:
        self._ports_file.unlink(missing_ok=True)  # a new one says this start is ready
        with open(self._log_file, "ab") as log:
            self._process = subprocess.Popen(
                self._argv,
                cwd=REPO_ROOT,
                start_new_session=True,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self._ports = _wait_ports_file(
            self._process, self._ports_file, self._log_file, self._timeout
        )

    def stop_server(self) -> None:
        if self._process is not None:
            _stop_process(self._process, timeout=self._timeout)


@contextmanager
def running_leveret(
    cpu: int | None,
    command: Sequence[str] | None = None,
    timeout: float = 60.0,
) -> Iterator[BrokerUnderTest]:
    """A Leveret node on ephemeral ports (DESIGN.md section 3), pinned to `cpu`."""
    base = Path(tempfile.mkdtemp(prefix="leveret-bench-node-"))
    ports_file = base / "ports.json"
    argv = [
        *die_with_parent(),
        *_pin(cpu),
        *(command or default_leveret_command()),
        "--amqp-port",
        "0",
        "--mgmt-port",
        "0",
        "--cluster-port",
        "0",
        "--data-dir",
        str(base / "data"),
        "--ports-file",
        str(ports_file),
    ]
    broker = _LeveretBroker(argv, ports_file, base / "leveret.log", timeout)
    try:
        broker.start_server()
        yield broker
    finally:
        broker.stop_server()
        shutil.rmtree(base, ignore_errors=True)


def _wait_ports_file(
    process: subprocess.Popen[bytes],
    ports_file: Path,
    log_file: Path,
    timeout: float,
) -> dict[str, int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ports = _read_ports(ports_file)
        if ports is not None:
            return ports
        if process.poll() is not None:
            raise BrokerStartError(
                f"leveret exited with status {process.returncode} before writing "
                f"{ports_file}\n{_tail(log_file)}"
            )
        time.sleep(_POLL_INTERVAL)
    raise BrokerStartError(
        f"leveret did not write {ports_file} within {timeout:.0f} s\n{_tail(log_file)}"
    )


def erlang_otp_release() -> str | None:
    erl = shutil.which("erl")
    if erl is None:
        return None
    expression = 'io:format("~s", [erlang:system_info(otp_release)]), halt().'
    try:
        completed = subprocess.run(
            [erl, "-noshell", "-eval", expression],
            check=False,
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return completed.stdout.strip() or None
