"""`leveret local-cluster` (`make cluster`): three nodes form one cluster, Ctrl-C stops them."""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

from leveret.cli.local_cluster import STOP_TIMEOUT_SECONDS
from tests.support.node import REPO, wait_for

# The command's own bound for stopping its nodes, and some time for it to exit after that.
LOCAL_CLUSTER_STOP_SECONDS = STOP_TIMEOUT_SECONDS + 15


def _cluster_status(mgmt_port: int) -> dict[str, object]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{mgmt_port}/api/cluster/status",
        headers={"Authorization": "Basic " + base64.b64encode(b"guest:guest").decode()},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return dict(json.load(response))


def _local_cluster(tmp_path: Path, output: Path) -> subprocess.Popen[bytes]:
    with open(output, "wb") as out:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "leveret",
                "local-cluster",
                "--base",
                "0",
                "--dir",
                str(tmp_path),
            ],
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def _processes_using(directory: Path) -> list[int]:
    """PIDs of the processes whose command line names `directory` (the nodes started there)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                command = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue  # gone meanwhile
            if str(directory).encode() in command:
                found.append(int(entry))
    return found


def _kill_all(process: subprocess.Popen[bytes], tmp_path: Path) -> None:
    """After a failure: the command, and the nodes it left behind."""
    if process.poll() is None:
        process.kill()
        process.wait(10)
    for pid in _processes_using(tmp_path):
        os.kill(pid, signal.SIGKILL)


def test_three_local_nodes_form_one_cluster_and_stop_together(tmp_path: Path) -> None:
    output = tmp_path / "out.txt"
    process = _local_cluster(tmp_path, output)
    try:
        wait_for(lambda: b"3 nodes running" in output.read_bytes(), 90, 0.1)
        text = output.read_text()
        mgmt_ports = [int(port) for port in re.findall(r"http://127\.0\.0\.1:(\d+)", text)]
        assert len(mgmt_ports) == 3
        expected = sorted(f"leveret-{n}@localhost" for n in (1, 2, 3))

        def all_running() -> bool:
            status = _cluster_status(mgmt_ports[0])
            return sorted(status["running_nodes"]) == expected  # type: ignore[arg-type]

        wait_for(all_running, 60, 0.2)
        process.send_signal(signal.SIGINT)
        assert process.wait(LOCAL_CLUSTER_STOP_SECONDS) == 0, output.read_text()
        for number in (1, 2, 3):
            log = (tmp_path / f"node{number}" / "node.log").read_text()
            assert "shutting down" in log
    finally:
        _kill_all(process, tmp_path)


def test_ctrl_c_while_a_node_starts_stops_that_node_too(tmp_path: Path) -> None:
    output = tmp_path / "out.txt"
    process = _local_cluster(tmp_path, output)
    try:
        # Node 2's log exists once it runs, and it is not serving before its ports file exists.
        wait_for(lambda: (tmp_path / "node2" / "node.log").exists(), 60, 0.02)
        process.send_signal(signal.SIGINT)
        assert process.wait(LOCAL_CLUSTER_STOP_SECONDS) == 0, output.read_text()
        assert _processes_using(tmp_path / "node2") == []
    finally:
        _kill_all(process, tmp_path)
