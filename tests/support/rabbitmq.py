"""Start a real RabbitMQ node as a subprocess with its own ports, directories and epmd.

The `rabbitmq` session fixture is here too; LEVERET_RABBITMQ_SERVER names another start script.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Self

import pika
import pika.exceptions
import pytest

from tests.support.ports import restartable_ports

# Debian installs the real start script here; /usr/sbin/rabbitmq-server is a wrapper that
# switches to the rabbitmq user and its fixed directories, which would defeat isolation.
_DEBIAN_SERVER = Path("/usr/lib/rabbitmq/bin/rabbitmq-server")
_DEBIAN_WRAPPER_NAME = "rabbitmq-script-wrapper"
_LOG_TAIL_LINES = 40
_POLL_INTERVAL = 0.2
_START_ATTEMPTS = 3


class RabbitMQStartError(RuntimeError):
    """RabbitMQ did not become ready; the message carries the tail of its logs."""


def find_rabbitmq() -> str | None:
    """Return the path of a usable rabbitmq-server start script, or None when none is installed."""
    override = os.environ.get("LEVERET_RABBITMQ_SERVER")
    if override:
        return override if os.access(override, os.X_OK) else None
    if os.access(_DEBIAN_SERVER, os.X_OK):
        return str(_DEBIAN_SERVER)
    found = shutil.which("rabbitmq-server")
    if found is None:
        return None
    if Path(found).resolve().name == _DEBIAN_WRAPPER_NAME:
        real = Path(found).resolve().parent / "rabbitmq-server"
        return str(real) if os.access(real, os.X_OK) else None
    return found


def _find_epmd() -> str | None:
    return shutil.which("epmd")


def die_with_parent() -> list[str]:
    """A command prefix that sends the process SIGTERM when the thread that started it dies.

    A test run killed outright would otherwise leave its node running in its own session.
    """
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "TERM"] if setpriv is not None else []


def _tail(path: Path, lines: int = _LOG_TAIL_LINES) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return f"({path} is missing)"
    return "\n".join(text.splitlines()[-lines:])


def _terminate(process: subprocess.Popen[bytes], timeout: float) -> None:
    """Stop a process we started (and its process group, which it leads) by PID."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=timeout)
    # The start script leads its own session; anything left in that group (the VM when the
    # script was killed before forwarding SIGTERM, or ended without stopping it) is ours.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    if process.poll() is None:
        process.wait(timeout=timeout)


def _wait_process_group_gone(pgid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(_POLL_INTERVAL)
    return False


@dataclass
class RabbitNode:
    """A running RabbitMQ node owned by this process; `stop()` ends it and removes its files."""

    amqp_port: int
    mgmt_port: int | None
    dist_port: int
    epmd_port: int
    node_name: str
    base_dir: Path
    process: subprocess.Popen[bytes]
    epmd_process: subprocess.Popen[bytes] | None
    keep_files: bool = False
    # How the server was started, so that start_server can start it again the same way.
    launch_argv: list[str] = field(default_factory=list, repr=False)
    launch_env: dict[str, str] = field(default_factory=dict, repr=False)
    _stopped: bool = field(default=False, repr=False)

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.amqp_port}/"

    @property
    def mgmt_url(self) -> str | None:
        if self.mgmt_port is None:
            return None
        return f"http://guest:guest@127.0.0.1:{self.mgmt_port}"

    @property
    def pid(self) -> int:
        """PID of the start script, which leads the process group the Erlang VM runs in."""
        return self.process.pid

    @property
    def log_file(self) -> Path:
        return self.base_dir / "log" / "rabbit.log"

    def log_tail(self, lines: int = _LOG_TAIL_LINES) -> str:
        return _describe_logs(self.base_dir, lines)

    def stop(self, timeout: float = 30.0) -> None:
        """Shut RabbitMQ down cleanly (SIGTERM to the script, which stops the VM), then its epmd."""
        if self._stopped:
            return
        self._stopped = True
        try:
            _terminate(self.process, timeout)
            _wait_process_group_gone(self.process.pid, timeout)
        finally:
            if self.epmd_process is not None:
                _terminate(self.epmd_process, timeout)
            if not self.keep_files:
                shutil.rmtree(self.base_dir, ignore_errors=True)

    def stop_server(self, timeout: float = 30.0) -> None:
        """Shut the server down with SIGTERM, keeping its files, ports and epmd for start_server."""
        _terminate(self.process, timeout)
        _wait_process_group_gone(self.process.pid, timeout)

    def start_server(self, timeout: float = 90.0) -> None:
        """Start the server again, after stop_server, on the same ports, data and configuration.

        Returns once it accepts AMQP connections; raises RabbitMQStartError otherwise.
        """
        if self._stopped or not self.launch_argv:
            raise RabbitMQStartError("start_server needs a node that stop() has not ended")
        if self.process.poll() is None:
            raise RabbitMQStartError("the server is still running; call stop_server first")
        with open(self.base_dir / "log" / "stdout.log", "ab") as output:
            self.process = subprocess.Popen(
                self.launch_argv,
                env=self.launch_env,
                cwd=self.base_dir,
                start_new_session=True,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
            )
        _wait_node_ready(self, timeout)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _describe_logs(base_dir: Path, lines: int = _LOG_TAIL_LINES) -> str:
    logs = [base_dir / "log" / "rabbit.log", base_dir / "log" / "stdout.log"]
    return "\n".join(f"--- {log} (tail) ---\n{_tail(log, lines)}" for log in logs)


def _write_node_files(
    base: Path,
    amqp_port: int,
    mgmt_port: int | None,
    management: bool,
    extra_config: Sequence[str],
    cookie: str,
    plugins: Sequence[str] = (),
) -> None:
    for sub in ("home", "log", "mnesia", "plugins-expand"):
        (base / sub).mkdir()
    cookie_file = base / "home" / ".erlang.cookie"
    cookie_file.write_text(cookie)
    cookie_file.chmod(0o400)
    (base / "rabbitmq-env.conf").write_text("")
    config = [
        f"listeners.tcp.1 = 127.0.0.1:{amqp_port}",
        "loopback_users.guest = true",
        # Shared CI machines often have little free disk; the alarm would block publishers.
        "disk_free_limit.absolute = 1MB",
        "log.file.level = info",
        "log.console = false",
    ]
    if management and mgmt_port is not None:
        config += [f"management.tcp.port = {mgmt_port}", "management.tcp.ip = 127.0.0.1"]
    config += extra_config
    (base / "rabbitmq.conf").write_text("\n".join(config) + "\n")
    enabled = [*(["rabbitmq_management"] if management else []), *plugins]
    (base / "enabled_plugins").write_text(f"[{','.join(enabled)}].\n")


def _node_env(
    base: Path,
    node_name: str,
    amqp_port: int,
    dist_port: int,
    epmd_port: int,
    scheduler_one: bool,
    extra_env: Mapping[str, str],
) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("RABBITMQ_")}
    env.update(
        {
            "HOME": str(base / "home"),
            "ERL_EPMD_PORT": str(epmd_port),
            "RABBITMQ_BASE": str(base),
            "RABBITMQ_CONF_ENV_FILE": str(base / "rabbitmq-env.conf"),
            "RABBITMQ_CONFIG_FILE": str(base / "rabbitmq.conf"),
            "RABBITMQ_ADVANCED_CONFIG_FILE": str(base / "advanced.config"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(base / "enabled_plugins"),
            "RABBITMQ_PLUGINS_EXPAND_DIR": str(base / "plugins-expand"),
            "RABBITMQ_MNESIA_BASE": str(base / "mnesia"),
            "RABBITMQ_LOG_BASE": str(base / "log"),
            "RABBITMQ_LOGS": str(base / "log" / "rabbit.log"),
            "RABBITMQ_PID_FILE": str(base / "rabbit.pid"),
            "RABBITMQ_NODENAME": node_name,
            "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
            "RABBITMQ_NODE_PORT": str(amqp_port),
            "RABBITMQ_DIST_PORT": str(dist_port),
        }
    )
    if scheduler_one:
        # One scheduler thread (and one online), so "one core" means one core of Erlang work.
        extra_args = env.get("RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS", "")
        env["RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS"] = f"+S 1:1 {extra_args}".strip()
    env.update(extra_env)
    return env


def _amqp_ready(port: int) -> bool:
    params = pika.ConnectionParameters(
        host="127.0.0.1",
        port=port,
        credentials=pika.PlainCredentials("guest", "guest"),
        connection_attempts=1,
        socket_timeout=2.0,
        blocked_connection_timeout=2.0,
    )
    try:
        connection = pika.BlockingConnection(params)
    except (pika.exceptions.AMQPError, OSError):
        return False
    connection.close()
    return True


def start_own_epmd(prefix: Sequence[str], epmd: str) -> tuple[subprocess.Popen[bytes], int]:
    """An epmd of our own on a free port. The port is free when reserved, but another process
    may take it before epmd binds it (epmd then exits at once): a few fresh ports are tried."""
    for _attempt in range(3):
        [port] = restartable_ports(1)
        process = subprocess.Popen(
            [*prefix, epmd, "-port", str(port)],
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        if _wait_epmd_listening(process, port, timeout=10.0):
            return process, port
        _terminate(process, 5.0)
    raise RabbitMQStartError(f"epmd did not listen on port {port}")


def _wait_epmd_listening(process: subprocess.Popen[bytes], port: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1.0):
                return True
        except OSError:
            time.sleep(_POLL_INTERVAL / 4)
    return False


def _wait_node_ready(node: RabbitNode, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if node.process.poll() is not None:
            raise RabbitMQStartError(
                f"RabbitMQ exited with status {node.process.returncode} before accepting "
                f"AMQP connections on port {node.amqp_port}\n{node.log_tail()}"
            )
        if _amqp_ready(node.amqp_port):
            return
        time.sleep(_POLL_INTERVAL)
    raise RabbitMQStartError(
        f"RabbitMQ did not accept AMQP connections on port {node.amqp_port} "
        f"within {timeout:.0f} s\n{node.log_tail()}"
    )


def _start_once(
    server: str,
    management: bool,
    extra_env: Mapping[str, str],
    extra_config: Sequence[str],
    cpu: int | None,
    scheduler_one: bool,
    timeout: float,
    keep_files: bool,
    cluster: ClusterMembership | None = None,
    plugins: Sequence[str] = (),
) -> RabbitNode:
    amqp_port, mgmt_port, dist_port, epmd_port = restartable_ports(4)
    if cluster is not None:
        epmd_port = cluster.epmd_port
    base = Path(tempfile.mkdtemp(prefix="leveret-rabbitmq-"))
    node_name = f"leveret-rmq-{os.getpid()}-{uuid.uuid4().hex[:8]}@localhost"
    cookie = cluster.cookie if cluster is not None else uuid.uuid4().hex.upper()
    _write_node_files(
        base,
        amqp_port,
        mgmt_port if management else None,
        management,
        extra_config,
        cookie,
        plugins,
    )
    prefix = die_with_parent() + (["taskset", "-c", str(cpu)] if cpu is not None else [])

    epmd_process = None
    epmd = _find_epmd()
    if epmd is not None and cluster is None:
        # Our own epmd on our own port: the node never registers with (or starts) a shared one.
        try:
            epmd_process, epmd_port = start_own_epmd(prefix, epmd)
        except RabbitMQStartError:
            shutil.rmtree(base, ignore_errors=True)
            raise
    env = _node_env(base, node_name, amqp_port, dist_port, epmd_port, scheduler_one, extra_env)

    with open(base / "log" / "stdout.log", "wb") as output:
        process = subprocess.Popen(
            [*prefix, server],
            env=env,
            cwd=base,
            start_new_session=True,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    node = RabbitNode(
        amqp_port=amqp_port,
        mgmt_port=mgmt_port if management else None,
        dist_port=dist_port,
        epmd_port=epmd_port,
        node_name=node_name,
        base_dir=base,
        process=process,
        epmd_process=epmd_process,
        keep_files=keep_files,
        launch_argv=[*prefix, server],
        launch_env=env,
    )
    try:
        _wait_node_ready(node, timeout)
        if management and node.mgmt_port is not None:
            _wait_http_ready(node, node.mgmt_port, deadline=time.monotonic() + timeout)
    except BaseException:
        node.stop()  # the error already carries the log tail it needs
        raise
    return node


def _wait_http_ready(node: RabbitNode, port: int, deadline: float) -> None:
    while time.monotonic() < deadline:
        if node.process.poll() is not None:
            raise RabbitMQStartError(
                f"RabbitMQ exited while the management listener started\n{node.log_tail()}"
            )
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1.0):
                return
        except OSError:
            time.sleep(_POLL_INTERVAL)
    raise RabbitMQStartError(f"the management listener did not open port {port}\n{node.log_tail()}")


@dataclass(frozen=True)
class ClusterMembership:
    """What the nodes of one RabbitMQ cluster share: an Erlang cookie and an epmd (its port)."""

    cookie: str
    epmd_port: int


def start_rabbitmq(
    *,
    management: bool = False,
    extra_env: Mapping[str, str] | None = None,
    extra_config: Sequence[str] = (),
    cpu: int | None = None,
    scheduler_one: bool = False,
    timeout: float = 90.0,
    keep_files: bool = False,
    cluster: ClusterMembership | None = None,
    plugins: Sequence[str] = (),
) -> RabbitNode:
    """Start a RabbitMQ node on fresh loopback ports and return it once it accepts AMQP.

    `extra_config` lines are appended to the node's rabbitmq.conf; `cpu` pins the node (and
    its epmd) to that core with taskset; `scheduler_one` adds `+S 1:1` to the VM's arguments;
    `plugins` are enabled beside management (e.g. rabbitmq_federation); `cluster` gives the
    cookie and the (already running) epmd of the cluster it is to join.
    Raises RabbitMQStartError, carrying the log tail, on failure.
    """
    server = find_rabbitmq()
    if server is None:
        raise RabbitMQStartError("rabbitmq-server is not installed")
    last_error: RabbitMQStartError | None = None
    for _ in range(_START_ATTEMPTS):
        try:
            return _start_once(
                server,
                management,
                extra_env or {},
                extra_config,
                cpu,
                scheduler_one,
                timeout,
                keep_files,
                cluster,
                plugins,
            )
        except RabbitMQStartError as error:
            last_error = error
            # Only a port taken between reservation and bind is worth another try; Erlang says
            # so as eaddrinuse, or as dist_port_already_used for the distribution port.
            text = str(error).lower()
            if "eaddrinuse" not in text and "port_already_used" not in text:
                raise
    assert last_error is not None
    raise last_error


def rabbitmq_missing_action(ci: bool) -> str:
    """What the fixture does when RabbitMQ is not installed: "fail" under CI, else "skip"."""
    return "fail" if ci else "skip"


def _running_under_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def require_rabbitmq() -> None:
    """Skip the test when RabbitMQ is not installed (fail it under CI, which installs it)."""
    if find_rabbitmq() is None:
        reason = "Debian's rabbitmq-server is not installed"
        if rabbitmq_missing_action(_running_under_ci()) == "fail":
            pytest.fail(f"{reason} (required when CI=true)")
        pytest.skip(reason)


@pytest.fixture(scope="session")
def rabbitmq() -> Iterator[RabbitNode]:
    """A RabbitMQ node shared by the test session (skipped when not installed, failing under CI)."""
    require_rabbitmq()
    with start_rabbitmq() as node:
        yield node
