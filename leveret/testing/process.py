"""`leveret server` as a subprocess on ephemeral ports, found through its --ports-file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_START_SECONDS = 20.0


class LeveretProcess:
    """One node in a process of its own; `start()` returns once it accepts connections."""

    def __init__(self, data_dir: str | None = None, extra_args: list[str] | None = None) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="leveret-proc-")
        self.data_dir = data_dir or os.path.join(self._tmp.name, "data")
        self.ports_file = os.path.join(self._tmp.name, "ports.json")
        self.log_path = os.path.join(self._tmp.name, "node.log")
        self.args = [
            sys.executable,
            "-m",
            "leveret",
            "server",
            "--bind",
            "127.0.0.1",
            "--amqp-port",
            "0",
            "--mgmt-port",
            "0",
            "--cluster-port",
            "0",
            "--data-dir",
            self.data_dir,
            "--ports-file",
            self.ports_file,
            *(extra_args or []),
        ]
        self.proc: subprocess.Popen[bytes] | None = None
        self.ports: dict[str, int] = {}

    def start(self) -> LeveretProcess:
        if os.path.exists(self.ports_file):
            os.unlink(self.ports_file)
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(self.args, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + _START_SECONDS
        while not os.path.exists(self.ports_file) and self.proc.poll() is None:
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"the node did not start in time:\n{self.log_tail()}")
            time.sleep(0.01)
        if self.proc.poll() is not None:
            raise RuntimeError(f"node exited with {self.proc.returncode}:\n{self.log_tail()}")
        self.ports = json.loads(Path(self.ports_file).read_text())
        return self

    @property
    def url(self) -> str:
        """The AMQP URL (as guest, who may log in from this host)."""
        return f"amqp://guest:guest@127.0.0.1:{self.ports['amqp']}/"

    @property
    def management_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['mgmt']}"

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(Path(self.log_path).read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def terminate(self, timeout: float = 15) -> int:
        """Stop cleanly (SIGTERM); the exit code."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def cleanup(self) -> None:
        self.kill()
        self._tmp.cleanup()

    def __enter__(self) -> LeveretProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.cleanup()
