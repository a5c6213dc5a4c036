"""`leveret local-cluster` (`make cluster`): three nodes form one cluster, Ctrl-C stops them."""

from __future__ import annotations

import base64
import json
import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

from tests.support.node import REPO, wait_for


def _cluster_status(mgmt_port: int) -> dict[str, object]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{mgmt_port}/api/cluster/status",
        headers={"Authorization": "Basic " + base64.b64encode(b"guest:guest").decode()},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return dict(json.load(response))


def test_three_local_nodes_form_one_cluster_and_stop_together(tmp_path: Path) -> None:
    output = tmp_path / "out.txt"
    with open(output, "wb") as out:
        process = subprocess.Popen(
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
        assert process.wait(60) == 0
        for number in (1, 2, 3):
            log = (tmp_path / f"node{number}" / "node.log").read_text()
            assert "shutting down" in log
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
