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
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.support.rabbitmq import find_rabbitmq, start_rabbitmq

REPO_ROOT = Path(__file__).resolve().parent.parent
_POLL_INTERVAL = 0.1


class BrokerStartError(RuntimeError):
    """The broker under test did not come up; the message carries its log tail."""


@dataclass(frozen=True)
class BrokerUnderTest:
    """A running broker: where to connect, and the process group whose cost is measured."""

    name: str
    url: str
    process_group: int


def default_leveret_command() -> list[str]:
    return [sys.executable, "-m", "leveret", "server"]


def _die_with_parent() -> list[str]:
    """A command prefix that sends the process SIGTERM when the thread that started it dies.

    A test run killed outright would otherwise leave its node running in its own session.
    """
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "TERM"] if setpriv is not None else []


def _pin(cpu: int | None) -> list[str]:
    return ["taskset", "-c", str(cpu)] if cpu is not None else []


@contextmanager
def running_rabbitmq(cpu: int | None) -> Iterator[BrokerUnderTest]:
    """RabbitMQ on its own ports, pinned to `cpu` with one scheduler (`+S 1:1`)."""
    if find_rabbitmq() is None:
        raise BrokerStartError(
            "rabbitmq-server is not installed (Debian: apt-get install rabbitmq-server)"
        )
    with start_rabbitmq(cpu=cpu, scheduler_one=True) as node:
        yield BrokerUnderTest(name="rabbitmq", url=node.url, process_group=node.pid)


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
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(process.pid, signal.SIGKILL)  # leftovers of the group we created
    except (ProcessLookupError, PermissionError):
        pass
    if process.poll() is None:
        process.wait(timeout=timeout)


@contextmanager
def running_leveret(
    cpu: int | None, command: Sequence[str] | None = None, timeout: float = 60.0,
) -> Iterator[BrokerUnderTest]:
    """A Leveret node on ephemeral ports (DESIGN.md section 3), pinned to `cpu`."""
    base = Path(tempfile.mkdtemp(prefix="leveret-bench-node-"))
    ports_file = base / "ports.json"
    log_file = base / "leveret.log"
    argv = [
        *_die_with_parent(), *_pin(cpu), *(command or default_leveret_command()),
        "--amqp-port", "0", "--mgmt-port", "0", "--cluster-port", "0",
        "--data-dir", str(base / "data"), "--ports-file", str(ports_file),
    ]
    with open(log_file, "wb") as log:
        process = subprocess.Popen(
            argv, cwd=REPO_ROOT, start_new_session=True, stdin=subprocess.DEVNULL,
            stdout=log, stderr=subprocess.STDOUT,
        )
    try:
        ports = _wait_ports_file(process, ports_file, log_file, timeout)
        yield BrokerUnderTest(
            name="leveret", url=f"amqp://guest:guest@127.0.0.1:{ports['amqp']}/",
            process_group=process.pid,
        )
    finally:
        _stop_process(process, timeout=30)
        shutil.rmtree(base, ignore_errors=True)


def _wait_ports_file(
    process: subprocess.Popen[bytes], ports_file: Path, log_file: Path, timeout: float,
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
            check=False, capture_output=True, text=True, timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return completed.stdout.strip() or None
