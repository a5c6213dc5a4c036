"""A Docker engine for the container tests: one already running, or dockerd started here and
stopped when the tests end, with the host's networking put back as it was.

dockerd turns on IP forwarding, sets the iptables FORWARD policy to DROP, adds its own chains
and NAT rules, and creates the docker0 bridge; a test run must leave the host as it found it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

_IP_FORWARD = Path("/proc/sys/net/ipv4/ip_forward")
_TABLES = ("filter", "nat")
_START_SECONDS = 60.0
_STOP_SECONDS = 30.0


class DockerUnavailable(RuntimeError):
    """No Docker engine answers and none can be started on this machine."""


def _answers(env: dict[str, str] | None = None) -> bool:
    if shutil.which("docker") is None:
        return False
    done = subprocess.run(
        ["docker", "version", "--format", "{{.Server.Version}}"],
        capture_output=True,
        env=env,
        timeout=30,
        check=False,
    )
    return done.returncode == 0


class DockerEngine:
    """The engine the tests use; `stop()` undoes whatever `start()` did."""

    def __init__(self) -> None:
        self.owned = False  # started here, so stopped here
        self._process: subprocess.Popen[bytes] | None = None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._ip_forward: str | None = None
        self._rules: dict[str, str] = {}
        self._policies: list[list[str]] = []  # [chain, policy] of the built-in chains
        self._had_docker0 = False

    def start(self) -> DockerEngine:
        if _answers():
            return self
        dockerd = shutil.which("dockerd")
        if dockerd is None or os.geteuid() != 0:
            raise DockerUnavailable("no Docker engine answers, and dockerd cannot be started here")
        self._save_host_networking()
        self._tmp = tempfile.TemporaryDirectory(prefix="leveret-dockerd-")
        log = open(Path(self._tmp.name) / "dockerd.log", "wb")  # noqa: SIM115 - lives with dockerd
        self._process = subprocess.Popen(
            [dockerd, "--storage-driver=overlay2"],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.owned = True
        deadline = time.monotonic() + _START_SECONDS
        while not _answers():
            if self._process.poll() is not None or time.monotonic() > deadline:
                tail = (Path(self._tmp.name) / "dockerd.log").read_text(errors="replace")[-2000:]
                self.stop()
                raise DockerUnavailable(f"dockerd did not start:\n{tail}")
            time.sleep(0.5)
        return self

    def stop(self) -> None:
        if not self.owned:
            return
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(_STOP_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
        self._restore_host_networking()
        if self._tmp is not None:
            self._tmp.cleanup()
        self.owned = False

    def _save_host_networking(self) -> None:
        self._ip_forward = _IP_FORWARD.read_text().strip()
        for table in _TABLES:
            saved = subprocess.run(
                ["iptables-save", "-t", table], capture_output=True, text=True, check=False
            )
            if saved.returncode == 0:
                self._rules[table] = saved.stdout
        # iptables-save prints nothing for a table nobody has used yet, yet dockerd then sets
        # its FORWARD policy to DROP: keep the built-in chains' policies apart.
        listed = subprocess.run(["iptables", "-S"], capture_output=True, text=True, check=False)
        self._policies = [
            line.split()[1:3] for line in listed.stdout.splitlines() if line.startswith("-P ")
        ]
        self._had_docker0 = Path("/sys/class/net/docker0").exists()

    def _restore_host_networking(self) -> None:
        for table, rules in self._rules.items():
            # Flush what dockerd added (its chains too), then load the table as it was.
            subprocess.run(["iptables", "-t", table, "-F"], capture_output=True, check=False)
            subprocess.run(["iptables", "-t", table, "-X"], capture_output=True, check=False)
            if rules.strip():
                subprocess.run(
                    ["iptables-restore", "-T", table], input=rules, text=True, check=False
                )
        for chain, policy in self._policies:
            subprocess.run(["iptables", "-P", chain, policy], capture_output=True, check=False)
        if self._ip_forward is not None:
            _IP_FORWARD.write_text(self._ip_forward + "\n")
        if not self._had_docker0 and Path("/sys/class/net/docker0").exists():
            subprocess.run(["ip", "link", "delete", "docker0"], capture_output=True, check=False)


def host_networking() -> tuple[str, list[str], bool]:
    """What dockerd changes on the host: IP forwarding, the built-in chains' policies, docker0."""
    listed = subprocess.run(["iptables", "-S"], capture_output=True, text=True, check=False)
    policies = [line for line in listed.stdout.splitlines() if line.startswith("-P ")]
    return _IP_FORWARD.read_text().strip(), policies, Path("/sys/class/net/docker0").exists()
